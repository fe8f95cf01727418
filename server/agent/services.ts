/**
 * Everything the agent's procedures work with, built once at start and closed at stop.
 * Domain modules take what they need from here as explicit arguments.
 */
import type { Logger } from '../common/log.js';
import { createFilesPrivately, privateDir } from '../common/private-files.js';
import { ChatHistory } from './chat/history.js';
import { configuredModel } from './model/configured.js';
import { ChatRuntime } from './chat/runtime.js';
import { HistorySearch, searchHistoryTool } from './chat/search.js';
import type { AgentConfig } from './config.js';
import { HeartbeatScheduler } from './heartbeat/scheduler.js';
import type { ModelSpec } from '@contracts/agent/model-spec.js';
import { ProactiveBudgetGate } from './proactive/budget.js';
import { HEARTBEAT_NEXT_KEY, readStoredTime, writeState } from './state.js';
import { TaskRunner } from './tasks/runner.js';
import { TaskStore } from './tasks/tasks.js';
import { scheduleTaskTool } from './tasks/tool.js';
import { UserZone } from './tasks/zone.js';
import { PendingStore } from './pending/store.js';
import { MessengerService } from './messenger/service.js';
import { openAgentStore, type AgentStore } from './store.js';
import { SubagentRegistry } from './subagents/registry.js';
import { spawnSubagentTool } from './subagents/tool.js';
import { WorkspaceQuota } from './files/quota.js';
import { workspaceTools } from './tools/index.js';
import { ConnectorTools } from './tools/connectors.js';
import { RequestActivity } from './lifecycle.js';
import { createAgentMetrics, type AgentMetrics } from './metrics.js';

export interface AgentServices {
  config: AgentConfig;
  log: Logger;
  store: AgentStore;
  chat: ChatRuntime;
  /** Proactive messages; `pending.onPending(listener)` is the hook for other deliveries (Telegram). */
  pending: PendingStore;
  subagents: SubagentRegistry;
  heartbeat: HeartbeatScheduler;
  /** Scheduled tasks: the store the API and the tool work on, the runner that runs them when due, the user's time zone. */
  tasks: { store: TaskStore; runner: TaskRunner; zone: UserZone };
  messenger: MessengerService;
  /** Requests in flight (the HTTP app counts them; lifecycle.ts reports them). */
  requests: RequestActivity;
  /**
   * The first half of a requested stop: no new runs or heartbeats; resolves once what runs has
   * ended or after `graceMs`. `close` then interrupts what is left.
   */
  drain(graceMs: number): Promise<void>;
  /** The workspace's disk quota, shared by uploads and the tools. */
  quota: WorkspaceQuota;
  /** Prometheus metrics (GET /metrics): requests, runs, tool calls, uploads, open streams. */
  metrics: AgentMetrics;
  close(): Promise<void>;
}

export async function createAgentServices(config: AgentConfig, log: Logger): Promise<AgentServices> {
  createFilesPrivately();
  await privateDir(config.workspace, log);
  await privateDir(config.stateDir, log);
  const store = await openAgentStore(config.stateDir, config.workspace, log);
  log.info({ file: store.file, applied: store.appliedMigrations }, 'agent store open');
  const { chat: chatConfig } = config;
  const pending = new PendingStore(store.db, log);
  // One quota for uploads and every tool set, so they all reserve from the same room.
  const quota = new WorkspaceQuota(config.workspace, config.workspaceQuotaBytes);
  const tools = workspaceTools(config, quota);
  // Subagents and heartbeats run in the background: the workspace tools without send_file.
  const { send_file: _sendFile, ...backgroundTools } = tools;
  // Each model client is made at its first call (model/configured.ts): an agent that never chats never loads one.
  const modelFor = (spec: ModelSpec) => configuredModel(spec, { apiKey: chatConfig.modelApiKey, egress: config.egress });
  const model = chatConfig.model ? modelFor(chatConfig.model) : null;
  const gate = new ProactiveBudgetGate(store.db, config.egress, log.child({ area: 'budget' }));
  const zone = UserZone.open(store.sql, config.tasks.userTimezone);
  const taskStore = new TaskStore(store, config.tasks, { zone: () => zone.get() });
  const subagents = new SubagentRegistry({
    config,
    log: log.child({ area: 'subagents' }),
    db: store.db,
    sql: store.sql,
    pending,
    model,
    tools: backgroundTools,
  });
  await subagents.start();
  // The user's connector tools, asked of the gateway at each chat run's start (none without a gateway).
  const connectorTools = config.egress ? new ConnectorTools(config.egress, config.workspace, quota, log.child({ area: 'connectors' })) : undefined;
  const userRunListeners = new Set<(chatId: string) => void>();
  const metrics = createAgentMetrics();
  // Chat runs are depth 0: they get spawn_subagent, schedule_task and search_history; subagents (depth 1) and heartbeats do not.
  const history = new ChatHistory(store.sql);
  const search = new HistorySearch(store.sql);
  const chat = new ChatRuntime({
    config,
    log,
    tools,
    history,
    runTools: async (chatId) => ({
      ...(await connectorTools?.tools()),
      ...spawnSubagentTool(subagents, { chatId, depth: 0 }),
      ...scheduleTaskTool(taskStore, { chatId, zone }),
      ...searchHistoryTool(search, { chatId }),
    }),
    metrics,
    onRunStart: (chatId) => {
      for (const listener of userRunListeners) listener(chatId);
    },
  });
  const heartbeat = new HeartbeatScheduler(
    {
      config,
      log: log.child({ area: 'heartbeat' }),
      db: store.db,
      pending,
      model: config.heartbeat.model ? modelFor(config.heartbeat.model) : model,
      tools: backgroundTools,
      gate,
      recent: (chatId, entries) => history.recent(chatId, entries),
      activeRun: (chatId) => chat.active(chatId).active,
      onUserRun: (listener) => {
        userRunListeners.add(listener);
        return () => userRunListeners.delete(listener);
      },
    },
    config.heartbeatIntervalSeconds * 1000,
    (at) => {
      try {
        writeState(store.sql, HEARTBEAT_NEXT_KEY, at.toISOString());
      } catch (error) {
        log.warn({ err: error }, 'heartbeat: next time not stored');
      }
    },
  );
  heartbeat.start(readStoredTime(store.sql, HEARTBEAT_NEXT_KEY) ?? config.heartbeat.nextAt);
  const taskRunner = new TaskRunner({
    store: taskStore,
    chat,
    pending,
    gate,
    ...(config.tasks.model ? { model: modelFor(config.tasks.model) } : {}),
    log: log.child({ area: 'tasks' }),
    waitMs: chatConfig.runTimeoutMs,
  });
  taskRunner.start();
  // Telegram (no-op without TELEGRAM_BOT_TOKEN); heartbeat and subagent messages for `telegram:<id>` chats reach Telegram too.
  const messenger = new MessengerService({ config, log, db: store.db, chat, pending });
  messenger.start();
  return {
    quota,
    metrics,
    config,
    log,
    store,
    chat,
    pending,
    subagents,
    heartbeat,
    tasks: { store: taskStore, runner: taskRunner, zone },
    messenger,
    requests: new RequestActivity(),
    async drain(graceMs) {
      await Promise.all([chat.drain(graceMs), subagents.drain(graceMs), heartbeat.drain(graceMs), taskRunner.drain(graceMs)]);
    },
    async close() {
      await messenger.stop();
      await heartbeat.close();
      await chat.close();
      await taskRunner.close();
      await subagents.close();
      pending.close();
      await store.close();
    },
  };
}
