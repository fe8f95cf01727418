import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { loadAccountConfig } from '../../server/account/config.js';
import { ConfigError } from '../../server/common/config.js';
import { loadAgentConfig } from '../../server/agent/config.js';
import { serviceEntry } from '../support/entries.js';

function run(service: 'account' | 'agent', env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, serviceEntry(service), {
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

describe('configuration', () => {
  it('the agent refuses to start without a secret, with one clear line', async () => {
    const { code, stderr } = await run('agent', { AGENT_PORT: '0' });
    expect(code).toBe(2);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/AGENT_SECRET or AGENT_SECRET_SHA256 is required/);
  });

  it('the account service names the bad variable and stops', async () => {
    const { code, stderr } = await run('account', { PORT: 'eighty', DATA_DIR: '/tmp/never-used' });
    expect(code).toBe(2);
    expect(stderr.trim()).toMatch(/^account: Invalid configuration: PORT: /);
  });

  it('the account service refuses a test-only setting in production at start', async () => {
    const { code, stderr } = await run('account', { AGENT_WEB_TEST_PUBLIC: '127.0.0.1:8080', NODE_ENV: 'production', DATA_DIR: '/tmp/never-used' });
    expect(code).toBe(2);
    expect(stderr.trim()).toMatch(/^account: Invalid configuration: AGENT_WEB_TEST_PUBLIC: is for tests only/);
    // Outside production it is taken.
    expect(loadAccountConfig({ AGENT_WEB_TEST_PUBLIC: '127.0.0.1:8080' }).web.policy.testPublic).toEqual(['127.0.0.1:8080']);
  });

  it.each([
    [{ PORT: '70000' }, 'PORT'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ BASE_URL: 'ftp://x' }, 'BASE_URL'],
    [{ REDIS_URL: 'nope' }, 'REDIS_URL'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ AGENT_WEB_TEST_PUBLIC: '127.0.0.1:8080', NODE_ENV: 'production' }, 'AGENT_WEB_TEST_PUBLIC'],
  ])('rejects %o naming %s', (env, name) => {
    expect(() => loadAccountConfig(env)).toThrow(ConfigError);
    expect(() => loadAccountConfig(env)).toThrow(new RegExp(`${name}: `));
  });

  it('has working defaults and treats empty strings as unset', () => {
    const config = loadAccountConfig({ DATABASE_URL: '', REDIS_URL: '' });
    expect(config).toMatchObject({ port: 3000, host: '127.0.0.1', baseUrl: 'http://127.0.0.1:3000', databaseUrl: undefined, redisUrl: undefined });
    expect(config.frontendUrl).toBe(config.baseUrl);
  });

  it('keeps only the hash of the agent secret', () => {
    const config = loadAgentConfig({ AGENT_SECRET: 'a-long-enough-secret' });
    expect(JSON.stringify(config)).not.toContain('a-long-enough-secret');
    expect(config.secretSha256).toHaveLength(32);
    expect(() => loadAgentConfig({ AGENT_SECRET: 'short' })).toThrow(/AGENT_SECRET: /);
    expect(() => loadAgentConfig({ AGENT_SECRET_SHA256: 'xyz' })).toThrow(/AGENT_SECRET_SHA256: /);
    expect(() => loadAgentConfig({ AGENT_SECRET: 'a-long-enough-secret', HEARTBEAT_INTERVAL: '-1' })).toThrow(/HEARTBEAT_INTERVAL/);
  });
});
