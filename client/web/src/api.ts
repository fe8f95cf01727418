/** The account API over tRPC, typed by the server's router. */
import { createTRPCClient, httpLink } from '@trpc/client';
import superjson from 'superjson';
import type { AccountRouter } from '../../../server/account/router.js';
import { loadTokens } from './session.js';

export const api = createTRPCClient<AccountRouter>({
  links: [
    httpLink({
      url: '/trpc',
      transformer: superjson,
      headers: () => {
        const tokens = loadTokens();
        return tokens ? { authorization: `Bearer ${tokens.access_token}` } : {};
      },
    }),
  ],
});

/** A readable message for any failure a call can end in. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : 'Something went wrong';
}
