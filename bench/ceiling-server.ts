/**
 * The ceilings the account bench compares against: a bare express handler and a bare node:http
 * handler answering a small JSON body. `node --import tsx bench/ceiling-server.ts express|http PORT`
 */
import { createServer } from 'node:http';
import express from 'express';

const [kind, port] = [process.argv[2], Number(process.argv[3])];
const body = JSON.stringify({ user_id: '00000000-0000-0000-0000-000000000000', session_id: '00000000-0000-0000-0000-000000000000', guest: true });

if (kind === 'express') {
  const app = express();
  app.get('/{*path}', (_req, res) => {
    res.json(JSON.parse(body));
  });
  app.listen(port, '127.0.0.1', () => process.send?.('ready'));
} else {
  createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }).listen(port, '127.0.0.1', () => process.send?.('ready'));
}
