/**
 * GET /dev/outbox (DEV_OUTBOX=1, never in production, only without SMTP_URL; see config.ts):
 * the newest messages of the local outbox as a page, so that a developer can sign in by e-mail
 * with no mail server. GET /dev/outbox.json gives the same list for scripts and e2e tests.
 * Every sign-in link and code is in it, so it answers callers on this machine only, whatever
 * HOST the service listens on (docs/security.md, The development outbox).
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Express, RequestHandler } from 'express';
import { AppError } from '../../../common/errors.js';
import { cameFromThisMachine } from '../../../common/net.js';
import type { OutboxEntry } from './mail.js';

const SHOWN = 50;

async function readOutbox(dir: string): Promise<OutboxEntry[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const newest = names
    .filter((n) => n.endsWith('.json'))
    .sort()
    .reverse()
    .slice(0, SHOWN);
  const entries = await Promise.all(
    newest.map((n) =>
      readFile(path.join(dir, n), 'utf8').then(
        (t) => JSON.parse(t) as OutboxEntry,
        () => undefined,
      ),
    ),
  );
  return entries.filter((e): e is OutboxEntry => e !== undefined);
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** Escapes, then makes http(s) links clickable. */
const linkify = (s: string) => escapeHtml(s).replace(/https?:\/\/[^\s<]+/g, (url) => `<a href="${url}">${url}</a>`);

export function mountDevOutbox(app: Express, dir: string): void {
  const page: RequestHandler = async (_req, res) => {
    const entries = await readOutbox(dir);
    const items = entries
      .map(
        (e) =>
          `<article><h2>${escapeHtml(e.subject)}</h2><p>to <b>${escapeHtml(e.to)}</b> · ${escapeHtml(e.date)} · <code>${escapeHtml(e.id)}.eml</code></p><pre>${linkify(e.text)}</pre></article>`,
      )
      .join('\n');
    res.setHeader('Cache-Control', 'no-store');
    res.type('html').send(`<!doctype html><html><head><meta charset="utf-8"><title>Outbox (development)</title>
<style>body{font-family:sans-serif;max-width:50rem;margin:2rem auto}article{border-top:1px solid #ccc}pre{white-space:pre-wrap}</style></head>
<body><h1>Local outbox</h1><p>Development only (DEV_OUTBOX=1). Files: <code>${escapeHtml(dir)}</code>. Newest first, at most ${SHOWN}.</p>
${items || '<p>No mail yet.</p>'}</body></html>`);
  };
  const json: RequestHandler = async (_req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.json({ messages: await readOutbox(dir) });
  };
  const thisMachineOnly: RequestHandler = (req, _res, next) => {
    next(cameFromThisMachine(req) ? undefined : new AppError(403, 'FORBIDDEN', 'The development outbox is served to callers on this machine only'));
  };
  app.get('/dev/outbox', thisMachineOnly, page);
  app.get('/dev/outbox.json', thisMachineOnly, json);
}
