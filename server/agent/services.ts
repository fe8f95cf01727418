/**
 * Everything the agent's procedures work with, built once at start and closed at stop.
 * Domain modules take what they need from here as explicit arguments.
 */
import type { Logger } from '../common/log.js';
import { createFilesPrivately, privateDir } from '../common/private-files.js';
import { ChatHistory } from './chat/history.js';
import { createLanguageModel } from './model/model.js';
import { ChatRuntime } from './chat/runtime.js';
import type { AgentConfig } from './config.js';
import { HeartbeatScheduler } from './heartbeat/scheduler.js';
import { PendingStore } from './pending/store.js';
import { MessengerService } from './messenger/service.js';
import { openAgentStore, type AgentStore } from './store.js';
import { SubagentRegistry } from './subagents/registry.js';
import { spawnSubagentTool } from './subagents/tool.js';
import { WorkspaceQuota } from './files/quota.js';
import { workspaceTools } from './tools/index.js';
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
  const model = chatConfig.model ? createLanguageModel(chatConfig.model, { apiKey: chatConfig.modelApiKey, egress: config.egress }) : null;
  const subagents = new SubagentRegistry({ config, log: log.child({ area: 'subagents' }), db: store.db, pending, model, tools: backgroundTools });
  await subagents.start();
  const userRunListeners = new Set<(chatId: string) => void>();
  const metrics = createAgentMetrics();
  // Chat runs are depth 0: they get spawn_subagent; subagents (depth 1) do not.
  const chat = new ChatRuntime({
    config,
    log,
    tools,
    history: new ChatHistory(store.sql),
    runTools: (chatId) => spawnSubagentTool(subagents, { chatId, depth: 0 }),
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
      model,
      tools: backgroundTools,
      activeRun: (chatId) => chat.active(chatId).active,
      onUserRun: (listener) => {
        userRunListeners.add(listener);
        return () => userRunListeners.delete(listener);
      },
    },
    config.heartbeatIntervalSeconds * 1000,
  );
  heartbeat.start(config.heartbeat.nextAt);
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
    messenger,
    requests: new RequestActivity(),
    async drain(graceMs) {
      await Promise.all([chat.drain(graceMs), subagents.drain(graceMs), heartbeat.drain(graceMs)]);
    },
    async close() {
      await messenger.stop();
      await heartbeat.close();
      await chat.close();
      await subagents.close();
      pending.close();
      await store.close();
    },
  };
}
