/**
 * Everything the agent's procedures work with, built once at start and closed at stop.
 * Domain modules take what they need from here as explicit arguments.
 */
import { mkdir } from 'node:fs/promises';
import type { Logger } from '../common/log.js';
import type { AgentConfig } from './config.js';
import { openAgentStore, type AgentStore } from './store.js';

export interface AgentServices {
  config: AgentConfig;
  log: Logger;
  store: AgentStore;
  close(): Promise<void>;
}

export async function createAgentServices(config: AgentConfig, log: Logger): Promise<AgentServices> {
  await mkdir(config.workspace, { recursive: true });
  const store = await openAgentStore(config.workspace);
  log.info({ file: store.file, applied: store.appliedMigrations }, 'agent store open');
  return {
    config,
    log,
    store,
    async close() {
      await store.close();
    },
  };
}
