import { z } from 'zod';
import { adminRouter } from './admin/router.js';
import { agentForwards } from './agents/proxy/router.js';
import { authRouter } from './auth/router.js';
import { tokensRouter } from './tokens/router.js';
import { accountRouter as selfServiceRouter } from './me/router.js';
import { botProcedures } from './messenger/router.js';
import { connectorsRouter } from './connectors/router.js';
import { publicProcedure, router } from './trpc.js';

export const accountRouter = router({
  auth: authRouter,
  tokens: tokensRouter,
  /** The signed-in user's own account: methods, sessions, activity (me/router.ts). */
  account: selfServiceRouter,
  /** The signed-in user's own agent (agents/proxy/router.ts), and their own bot beside its messenger (messenger/router.ts). */
  agent: router({ ...agentForwards, messenger: { ...agentForwards.messenger, ...botProcedures } }),
  /** The signed-in user's own MCP servers (connectors/router.ts, docs/connectors.md). */
  connectors: connectorsRouter,
  /** Operators: admins and API keys (admin/router.ts, docs/admin.md). */
  admin: adminRouter,
  /** `GET /api/v1` sends people (and tools) to the API's description. */
  index: publicProcedure
    .meta({ openapi: { method: 'GET', path: '/', protect: false, summary: 'Redirects to the OpenAPI document' }, rest: { kind: 'redirect' } })
    .input(z.void())
    .output(z.object({ location: z.string() }))
    .query(({ ctx }) => ({ location: `${ctx.services.config.baseUrl}/api/v1/openapi.json` })),
});

export type AccountRouter = typeof accountRouter;
