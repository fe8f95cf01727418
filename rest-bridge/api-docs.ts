/**
 * The served API reference: `GET <bridge>/docs` renders the service's own OpenAPI document
 * (`openapi.json` beside it) as a browsable page with Swagger UI, from the installed
 * swagger-ui-dist files. Nothing is fetched from elsewhere: the page's CSP allows this origin
 * only, and no inline script (the start-up is rest-bridge/api-docs.browser.js, served as a file).
 * Every URL in the page is relative, so it works wherever the bridge is mounted (`/api/v1/docs`
 * on the account service, `/docs` on an agent, `/api/v1/agent/docs` through the proxy).
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import type { RequestHandler } from 'express';
import { REPO_ROOT } from '../server/common/build.js';
import { notFound } from '../server/common/errors.js';
import type { RouteTable } from './routes.js';

export const API_DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  // Swagger UI's icons are data: URIs in its stylesheet.
  "img-src 'self' data:",
  // The document itself, and "Try it out" against this origin.
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

const swaggerDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** The only files the page loads, by the name it asks for. */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': path.join(swaggerDir, 'swagger-ui.css'),
  'swagger-ui-bundle.js': path.join(swaggerDir, 'swagger-ui-bundle.js'),
  'start.js': path.join(REPO_ROOT, 'rest-bridge/api-docs.browser.js'),
};

function page(title: string): string {
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${title} reference</title>
    <link rel="stylesheet" href="docs/swagger-ui.css" />
  </head>
  <body>
    <form id="token-form" hidden>
      <p role="alert">This service's OpenAPI document needs its bearer token (an agent's: its agent secret).</p>
      <label>Bearer token <input type="password" name="token" autocomplete="off" required /></label>
      <button type="submit">Load</button>
    </form>
    <div id="swagger-ui" data-spec="openapi.json"></div>
    <script src="docs/swagger-ui-bundle.js"></script>
    <script src="docs/start.js"></script>
  </body>
</html>
`;
}

/** Adds `GET /docs` and its assets to the bridge's table, beside its `GET /openapi.json`. */
export function mountApiDocs(table: RouteTable, title: string): void {
  const html = page(title);
  const showPage: RequestHandler = (req, res) => {
    // `docs/` would resolve the page's relative URLs one level too deep.
    if (req.path.endsWith('/')) return res.redirect(301, '../docs');
    res.setHeader('Content-Security-Policy', API_DOCS_CSP);
    res.setHeader('Cache-Control', 'no-cache');
    res.type('html').send(html);
  };
  const sendAsset: RequestHandler = (req, res, next) => {
    const file = Object.hasOwn(ASSETS, String(req.params.asset)) ? ASSETS[String(req.params.asset)] : undefined;
    if (!file) throw notFound('No such file of the API reference');
    res.sendFile(file, { headers: { 'Cache-Control': 'no-cache' } }, (error) => error && next(error));
  };
  table.add('get', '/docs', [showPage]);
  table.add('get', '/docs/{asset}', [sendAsset]);
  // A service with strict routing (the agent) does not match `/docs/` to `/docs`: send it there too.
  table.app.get('/docs/', showPage);
}
