/**
 * The agent's secrets (its bearer secret, its bot's token and webhook secret), read once at start
 * from the pipe the account service opened for them (AGENT_SECRETS_FD, a JSON object of settings)
 * and merged into the settings the configuration is read from. They never enter the process
 * environment: Linux keeps a process's original environment readable in /proc/<pid>/environ for
 * its whole life, whatever is deleted from `process.env` later. Secrets an operator gave a
 * standalone agent in its environment are deleted from `process.env`, so that no child inherits
 * them (docs/security.md, "exec cannot read its agent").
 */
import { closeSync, readFileSync } from 'node:fs';

/** Setting names that are secrets; the same rule as the account service's launcher. */
const SECRET_SETTING = /(SECRET|TOKEN|_KEY$)/;

export function takeSecrets(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const fd = env.AGENT_SECRETS_FD;
  const fromPipe: Record<string, string> = {};
  if (fd && /^\d+$/.test(fd)) {
    const parsed: unknown = JSON.parse(readFileSync(Number(fd), 'utf8') || '{}');
    closeSync(Number(fd));
    if (parsed && typeof parsed === 'object') {
      for (const [name, value] of Object.entries(parsed)) if (typeof value === 'string') fromPipe[name] = value;
    }
  }
  const settings = { ...env, ...fromPipe };
  for (const name of Object.keys(env)) if (SECRET_SETTING.test(name)) delete env[name];
  delete env.AGENT_SECRETS_FD;
  return settings;
}
