/**
 * The agents registry from the command line (for AGENT_PROVISIONER=static, and to inspect `local`):
 *   npm run agents -- list
 *   npm run agents -- add NAME URL [--secret S] [--user USER_ID]   (prints a new secret when none is given)
 *   npm run agents -- assign NAME USER_ID      |  npm run agents -- assign NAME --none
 *   npm run agents -- remove NAME
 * Uses the same DATABASE_URL / DATA_DIR (and AGENT_SECRETS_KEY) as the account service.
 */
import { parseArgs } from 'node:util';
import { loadAccountConfig } from '../server/account/config.js';
import { AgentRegistry, newAgentSecret } from '../server/account/agents/registry.js';
import { loadSecretBox } from '../server/account/agents/secrets.js';
import { openAccountStore } from '../server/account/store.js';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { secret: { type: 'string' }, user: { type: 'string' }, none: { type: 'boolean', default: false } },
});
const [command, name, arg] = positionals;
const usage = 'usage: npm run agents -- list | add NAME URL [--secret S] [--user ID] | assign NAME USER_ID|--none | remove NAME';

const config = loadAccountConfig(process.env);
const store = await openAccountStore(config);
const registry = new AgentRegistry(store.db, await loadSecretBox(config.agentSecretsKey, config.dataDir));

try {
  switch (command) {
    case 'list':
      console.table(await registry.list());
      break;
    case 'add': {
      if (!name || !arg || !/^https?:\/\//.test(arg)) throw new Error(usage);
      const secret = values.secret ?? newAgentSecret();
      const agent = await registry.add({ name, url: arg.replace(/\/$/, ''), secret, kind: 'static', ...(values.user ? { userId: values.user } : {}) });
      console.log(`added agent ${agent.name} at ${agent.url}${values.secret ? '' : `\nits secret (give it to the agent as AGENT_SECRET): ${secret}`}`);
      break;
    }
    case 'assign':
      if (!name || (!arg && !values.none)) throw new Error(usage);
      await registry.assign(name, values.none ? null : (arg ?? null));
      console.log(values.none ? `agent ${name} unassigned` : `agent ${name} now serves user ${arg}`);
      break;
    case 'remove':
      if (!name) throw new Error(usage);
      await registry.remove(name);
      console.log(`agent ${name} removed`);
      break;
    default:
      throw new Error(usage);
  }
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
} finally {
  await store.close();
}
