/**
 * The account API's documented REST paths (spec: "Account API"), mounted under /api/v1.
 * Routes only: every handler calls an account procedure.
 */
import type { IRouter, Request } from 'express';
import { accountRouter, type AccountRouter } from '../server/account/router.js';
import { createCallerFactory, type AccountContext } from '../server/account/trpc.js';
import { mountJsonProcedures } from './json.js';
import { openApiDocument } from './openapi.js';
import { RouteTable, type CallerFor } from './routes.js';

const createCaller = createCallerFactory(accountRouter);

export function mountAccountBridge(api: IRouter, contextFor: (req: Request) => AccountContext, baseUrl: string): void {
  const table = new RouteTable(api);
  const callerFor: CallerFor<AccountRouter> = (req, signal) => createCaller(contextFor(req), { signal });

  mountJsonProcedures(table, accountRouter, callerFor);

  let document: unknown;
  table.add('get', '/openapi.json', [
    (_req, res) => {
      document ??= openApiDocument(accountRouter, table, { title: 'Account API', version: '1', baseUrl: `${baseUrl}/api/v1` });
      res.json(document);
    },
  ]);
  table.finish();
}
