/**
 * A user's connectors (connectors.ts): `connectors.*` over tRPC, `/api/v1/connectors` over REST.
 * The browser steps of the sign-in (authorize, callback) are redirects, in rest-routes.ts; the
 * answers that hand out a sign-in link set the cookie those steps ask for (sign-in-cookie.ts).
 */
import { z } from 'zod';
import { AppError } from '../../common/errors.js';
import { rateLimited, router, userProcedure, type AccountContext } from '../trpc.js';
import type { Connectors } from './connectors.js';
import { AuthorizeLink, ConnectorId, ConnectorList, ConnectorUpdate, ConnectorView, CreatedConnector, NewConnector } from './schemas.js';
import { browserBinding, SIGN_IN_COOKIE, signInCookie } from './sign-in-cookie.js';

const REFUSALS = ['CONNECTORS_NOT_FOR_GUESTS', 'CONNECTORS_DISABLED'] as const;

/** The service's connectors, for a caller who may have some: a full account (or a guest where CONNECTORS_FOR_GUESTS=1). */
function connectorsFor(ctx: AccountContext & { user: { guest: boolean } }): Connectors {
  const { connectors, config } = ctx.services;
  if (!connectors || !config.connectors.enabled) throw new AppError(403, 'CONNECTORS_DISABLED', 'This service does not offer connectors');
  if (ctx.user.guest && !config.connectors.forGuests) throw new AppError(403, 'CONNECTORS_NOT_FOR_GUESTS', 'Connectors are for full accounts');
  return connectors;
}

/** Runs `hand` with this browser's sign-in binding; an answer that hands out a link sets its cookie (sign-in-cookie.ts). */
async function inThisBrowser<T extends { authorize_url?: string }>(ctx: AccountContext, hand: (browser: string) => Promise<T>): Promise<T> {
  const browser = browserBinding(ctx.request.cookie(SIGN_IN_COOKIE));
  const answer = await hand(browser);
  if (answer.authorize_url) ctx.request.setHeader('set-cookie', signInCookie(browser, ctx.services.config.baseUrl));
  return answer;
}

const reading = userProcedure.use(rateLimited('account.read'));
const changing = userProcedure.use(rateLimited('account.change'));

export const connectorsRouter = router({
  list: reading
    .meta({ openapi: { method: 'GET', path: '/connectors', summary: "The user's MCP servers, their status and tools" }, errors: [...REFUSALS] })
    .input(z.void())
    .output(ConnectorList)
    .query(async ({ ctx }) => ({ connectors: await connectorsFor(ctx).list(ctx.user.userId) })),
  create: changing
    .meta({
      openapi: {
        method: 'POST',
        path: '/connectors',
        summary: 'Add an MCP server by URL (201); `needs_auth` comes with the `authorize_url` to send the browser to',
      },
      rest: { kind: 'created' },
      errors: [...REFUSALS, 'CONNECTOR_URL_REFUSED', 'CONNECTOR_NAME_TAKEN', 'CONNECTORS_LIMIT', 'CONNECTOR_UNREACHABLE'],
    })
    .input(NewConnector)
    .output(CreatedConnector)
    .mutation(({ ctx, input }) => inThisBrowser(ctx, (browser) => connectorsFor(ctx).create(ctx.user.userId, input, browser))),
  update: changing
    .meta({
      openapi: { method: 'PATCH', path: '/connectors/{id}', summary: 'Rename a connector, or switch its tools on and off' },
      errors: [...REFUSALS, 'CONNECTOR_NOT_FOUND', 'CONNECTOR_NAME_TAKEN'],
    })
    .input(ConnectorUpdate)
    .output(ConnectorView)
    .mutation(({ ctx, input }) => connectorsFor(ctx).update(ctx.user.userId, input)),
  remove: changing
    .meta({
      openapi: { method: 'DELETE', path: '/connectors/{id}', summary: 'Remove a connector (204); its tokens are revoked where the server allows' },
      rest: { kind: 'empty' },
      errors: [...REFUSALS, 'CONNECTOR_NOT_FOUND'],
    })
    .input(ConnectorId)
    .output(z.void())
    .mutation(({ ctx, input }) => connectorsFor(ctx).remove(ctx.user.userId, input.id)),
  signIn: changing
    .meta({
      openapi: { method: 'POST', path: '/connectors/{id}/authorize', summary: 'A new sign-in link for the connector (one use, 10 minutes)' },
      errors: [...REFUSALS, 'CONNECTOR_NOT_FOUND', 'CONNECTOR_UNREACHABLE', 'CONFLICT'],
    })
    .input(ConnectorId)
    .output(AuthorizeLink)
    .mutation(({ ctx, input }) => inThisBrowser(ctx, (browser) => connectorsFor(ctx).authorizeLink(ctx.user.userId, input.id, browser))),
});
