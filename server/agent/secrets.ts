/**
 * The agent's secrets (its bearer secret, its egress token, its bot's token and webhook secret),
 * read once at start from the pipe the account service opened for them (AGENT_SECRETS_FD) or, in
 * a Kubernetes pod, from its Secret mounted read-only (AGENT_SECRETS_FILE), a JSON object of
 * settings either way, and merged into the settings the configuration is read from. They never enter the process
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
  let fromPipe: Record<string, string> = {};
  if (fd && /^\d+$/.test(fd)) {
    fromPipe = secretSettings(readFileSync(Number(fd), 'utf8'));
    closeSync(Number(fd));
  }
  const fromFile = env.AGENT_SECRETS_FILE ? secretSettings(readFileSync(env.AGENT_SECRETS_FILE, 'utf8')) : {};
  const settings = { ...env, ...fromFile, ...fromPipe };
  for (const name of Object.keys(env)) if (SECRET_SETTING.test(name)) delete env[name];
  delete env.AGENT_SECRETS_FD;
  delete env.AGENT_SECRETS_FILE;
  return settings;
}

/** The string settings of a JSON object. */
function secretSettings(json: string): Record<string, string> {
  const parsed: unknown = JSON.parse(json || '{}');
  if (!parsed || typeof parsed !== 'object') return {};
  return Object.fromEntries(Object.entries(parsed).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}
