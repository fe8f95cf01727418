/**
 * Everything the agent's procedures work with, built once at start and closed at stop.
 * Domain modules take what they need from here as explicit arguments.
 */
import { mkdir } from 'node:fs/promises';
import type { Logger } from '../common/log.js';
import { ChatRuntime } from './chat/runtime.js';
import type { AgentConfig } from './config.js';
import { openAgentStore, type AgentStore } from './store.js';

export interface AgentServices {
  config: AgentConfig;
  log: Logger;
  store: AgentStore;
  chat: ChatRuntime;
  close(): Promise<void>;
}

export async function createAgentServices(config: AgentConfig, log: Logger): Promise<AgentServices> {
  await mkdir(config.workspace, { recursive: true });
  const store = await openAgentStore(config.workspace);
  log.info({ file: store.file, applied: store.appliedMigrations }, 'agent store open');
  const chat = new ChatRuntime({ config, log, db: store.db });
  return {
    config,
    log,
    store,
    chat,
    async close() {
      await chat.close();
      await store.close();
    },
  };
}
