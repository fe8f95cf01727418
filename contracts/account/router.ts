/**
 * The account service's tRPC router type, for its clients (client/sdk, client/web). tRPC infers it
 * from the router itself, so this is the one name contracts takes from a service, and only as a
 * type (erased at build; the depcruise rule admits nothing else).
 */
export type { AccountRouter } from '../../server/account/router.js';
