/** Configuration of subagents and heartbeat: defaults, injectable short values, refusals. */
import { describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../../server/agent/config.js';

const base = { AGENT_SECRET: 'a-long-enough-secret' };

describe('subagent and heartbeat configuration', () => {
  it('has the documented defaults', () => {
    const config = loadAgentConfig(base);
    expect(config.heartbeatIntervalSeconds).toBe(1800);
    expect(config.heartbeat).toEqual({ waitMs: 60_000 });
    expect(config.subagents).toEqual({ timeoutMs: 600_000, maxRunning: 8, retentionMs: 3_600_000, purgeIntervalMs: 60_000 });
  });

  it('takes short (fractional) values for tests, and 0 disables the heartbeat', () => {
    const config = loadAgentConfig({
      ...base,
      HEARTBEAT_INTERVAL: '0.2',
      SUBAGENT_TIMEOUT: '0.5',
      SUBAGENT_RETENTION: '1',
      SUBAGENT_MAX_RUNNING: '2',
      HEARTBEAT_WAIT: '0',
    });
    expect(config.heartbeatIntervalSeconds).toBe(0.2);
    expect(config.subagents).toMatchObject({ timeoutMs: 500, retentionMs: 1000, maxRunning: 2 });
    expect(config.heartbeat.waitMs).toBe(0);
    expect(loadAgentConfig({ ...base, HEARTBEAT_INTERVAL: '0' }).heartbeatIntervalSeconds).toBe(0);
  });

  it.each([
    ['SUBAGENT_MAX_RUNNING', '0'],
    ['SUBAGENT_MAX_RUNNING', '1.5'],
    ['SUBAGENT_TIMEOUT', '0'],
    ['SUBAGENT_TIMEOUT', 'soon'],
    ['SUBAGENT_RETENTION', '-1'],
    ['HEARTBEAT_INTERVAL', 'never'],
    ['HEARTBEAT_WAIT', '-1'],
  ])('refuses %s=%s', (name, value) => {
    expect(() => loadAgentConfig({ ...base, [name]: value })).toThrow(new RegExp(name));
  });
});
