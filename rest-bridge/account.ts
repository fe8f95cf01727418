/**
 * The account API's documented REST paths (spec: "Account API"), mounted under /api/v1.
 * Routes only: every handler calls an account procedure.
 */
import type { IRouter, Request } from 'express';
import { accountRouter } from '../server/account/router.js';
import type { AccountContext } from '../server/account/trpc.js';
import { forwardToAgent } from '../server/account/agents/http-proxy.js';
import { admitAgentRequest } from '../server/account/agents/guest-policy.js';
import { badRequest } from '../server/common/errors.js';
import { mountJsonProcedures } from './json.js';
import { openApiDocument } from './openapi.js';
import { RouteTable } from './routes.js';

/** `/x//y?q` as asked, with its leading slashes collapsed; and its path, decoded, for the guest policy. */
function agentTarget(rest: string): { path: string; pathname: string } {
  const query = rest.indexOf('?');
  const rawPath = `/${(query < 0 ? rest : rest.slice(0, query)).replace(/^\/+/, '')}`;
  try {
    return { path: rawPath + (query < 0 ? '' : rest.slice(query)), pathname: decodeURIComponent(rawPath) };
  } catch {
    throw badRequest('Malformed path');
  }
}

export function mountAccountBridge(api: IRouter, contextFor: (req: Request) => AccountContext, baseUrl: string): void {
  const table = new RouteTable(api);
  mountJsonProcedures(table, accountRouter, contextFor);

  // The signed-in user's own agent, at its documented REST paths under /api/v1/agent/.
  api.all('/agent/*path', async (req, res) => {
    const { services } = contextFor(req);
    const user = await services.tokens.authenticate(req.headers.authorization);
    const { path, pathname } = agentTarget(req.originalUrl.slice(`${req.baseUrl}/agent`.length));
    const { maxBodyBytes } = await admitAgentRequest({ method: req.method, path: pathname, guest: user.guest, userId: user.userId }, services.rateLimits);
    const agent = await services.agents.provisioner.agentFor(user.userId);
    await forwardToAgent(req, res, agent, { path, maxBodyBytes });
  });

  let document: unknown;
  table.add('get', '/openapi.json', [
    (_req, res) => {
      document ??= openApiDocument(accountRouter, table, { title: 'Account API', version: '1', baseUrl: `${baseUrl}/api/v1` });
      res.json(document);
    },
  ]);
  table.finish();
}
