/**
 * The agent's tRPC router type: what the account service's client (server/account/agents/client.ts)
 * is typed with. tRPC infers it from the router itself, so this is the one name contracts takes
 * from a service, and only as a type (erased at build; the depcruise rule admits nothing else).
 */
export type { AgentRouter } from '../../server/agent/router.js';
