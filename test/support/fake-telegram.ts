/**
 * A fake Telegram Bot API server on loopback. It speaks the real HTTP API
 * (`{apiRoot}/bot<token>/<method>`, JSON, urlencoded or multipart bodies, `{ok, result}` /
 * `{ok:false, error_code, description, parameters}` answers), so the agent's grammY client
 * runs unchanged with `TELEGRAM_API_ROOT` pointing here.
 *
 * Methods: getMe, getUpdates (long polling with offset and timeout), deleteWebhook,
 * sendMessage, sendDocument (multipart upload recorded with its bytes), sendChatAction.
 * Every call is recorded (`calls`). `fail(method, ...faults)` queues faults for the next calls
 * of a method: an HTTP error (429 with `retry_after`, 5xx…) or a dropped connection.
 * `userSays(...)` queues an incoming message update.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import busboy from 'busboy';

export interface FakeUser {
  id: number;
  first_name: string;
  last_name?: string;
  username?: string;
}

export interface RecordedCall {
  method: string;
  params: Record<string, unknown>;
  /** sendDocument: the uploaded file. */
  file?: { field: string; filename: string; bytes: Buffer };
  at: number;
}

export type Fault = { status: number; description?: string; retry_after?: number } | { drop: true };

export interface FakeTelegram {
  apiRoot: string;
  token: string;
  bot: { id: number; username: string; first_name: string };
  calls: RecordedCall[];
  /** Calls of one method (optionally to one chat). */
  callsOf(method: string, chatId?: number): RecordedCall[];
  /** Texts sent to a chat by sendMessage, in order. */
  textsTo(chatId: number): string[];
  /** Queues an incoming message; private chat with the user unless `chat` is given. */
  userSays(from: FakeUser, text: string, chat?: { id: number; type: 'group' | 'supergroup'; title: string }): number;
  /** The next calls of `method` meet these faults, in order. */
  fail(method: string, ...faults: Fault[]): void;
  /** The webhook set by setWebhook, if any. */
  webhook(): { url: string; secret?: string } | undefined;
  /** Webhook mode: the status each push got. */
  pushes: Array<{ update_id: number; status: number }>;
  /** Updates not yet confirmed by an offset. */
  unconfirmed(): number;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

async function readParams(req: IncomingMessage, url: URL): Promise<{ params: Record<string, unknown>; file?: RecordedCall['file'] }> {
  const type = req.headers['content-type'] ?? '';
  const params: Record<string, unknown> = Object.fromEntries(url.searchParams);
  if (type.startsWith('multipart/form-data')) {
    return new Promise((resolve, reject) => {
      let file: RecordedCall['file'];
      const parser = busboy({ headers: req.headers });
      parser.on('field', (name, value) => {
        params[name] = value;
      });
      parser.on('file', (field, stream, info) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          file = { field, filename: info.filename ?? '', bytes: Buffer.concat(chunks) };
        });
      });
      parser.on('close', () => resolve({ params, file }));
      parser.on('error', reject);
      req.pipe(parser);
    });
  }
  const body = (await readBody(req)).toString('utf8');
  if (type.startsWith('application/json') && body) Object.assign(params, JSON.parse(body) as Record<string, unknown>);
  else if (type.startsWith('application/x-www-form-urlencoded')) Object.assign(params, Object.fromEntries(new URLSearchParams(body)));
  return { params };
}

export async function startFakeTelegram(
  opts: { token?: string; bot?: { id: number; username: string; first_name: string }; port?: number } = {},
): Promise<FakeTelegram> {
  const token = opts.token ?? '123456:TEST-token_fake';
  const bot = opts.bot ?? { id: 777, username: 'fake_agent_bot', first_name: 'Fake Agent' };
  const calls: RecordedCall[] = [];
  const updates: Array<{ update_id: number; message: Record<string, unknown> }> = [];
  const faults = new Map<string, Fault[]>();
  const waiters = new Set<() => void>();
  const sockets = new Set<Socket>();
  let webhook: { url: string; secret?: string } | undefined;
  /** Webhook mode: answers of Telegram's pushes to the webhook, in order. */
  const pushes: Array<{ update_id: number; status: number }> = [];
  let updateSeq = 1000;
  let messageSeq = 1;

  const wake = () => {
    for (const w of [...waiters]) w();
  };

  function answer(res: ServerResponse, status: number, body: unknown): void {
    if (res.writableEnded || res.destroyed) return;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }
  const ok = (res: ServerResponse, result: unknown) => answer(res, 200, { ok: true, result });
  const error = (res: ServerResponse, status: number, description: string, parameters?: Record<string, unknown>) =>
    answer(res, status, { ok: false, error_code: status, description, ...(parameters ? { parameters } : {}) });

  function sentMessage(chatId: number, extra: Record<string, unknown>) {
    return {
      message_id: messageSeq++,
      date: Math.floor(Date.now() / 1000),
      chat: { id: chatId, type: chatId < 0 ? 'group' : 'private' },
      from: { id: bot.id, is_bot: true, first_name: bot.first_name, username: bot.username },
      ...extra,
    };
  }

  async function getUpdates(params: Record<string, unknown>, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const offset = Number(params.offset ?? 0);
    const timeout = Math.min(Number(params.timeout ?? 0), 50);
    const limit = Number(params.limit ?? 100);
    // An offset confirms every update below it.
    while (updates.length > 0 && updates[0]!.update_id < offset) updates.shift();
    if (updates.length === 0 && timeout > 0) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          waiters.delete(done);
          req.off('close', done);
          resolve();
        };
        const timer = setTimeout(done, timeout * 1000);
        waiters.add(done);
        req.on('close', done);
      });
    }
    ok(res, updates.filter((u) => u.update_id >= offset).slice(0, limit));
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(url.pathname);
    if (!match) return error(res, 404, 'Not Found');
    const [, gotToken, method] = match as unknown as [string, string, string];
    const { params, file } = await readParams(req, url);
    calls.push({ method, params, file, at: Date.now() });
    const fault = faults.get(method)?.shift();
    if (fault) {
      if ('drop' in fault) {
        req.socket.destroy();
        return;
      }
      return error(
        res,
        fault.status,
        fault.description ?? `Fault ${fault.status}`,
        fault.retry_after !== undefined ? { retry_after: fault.retry_after } : undefined,
      );
    }
    if (gotToken !== token) return error(res, 401, 'Unauthorized');
    const chatId = Number(params.chat_id);
    switch (method) {
      case 'getMe':
        return ok(res, {
          id: bot.id,
          is_bot: true,
          first_name: bot.first_name,
          username: bot.username,
          can_join_groups: true,
          can_read_all_group_messages: false,
          supports_inline_queries: false,
        });
      case 'deleteWebhook':
        webhook = undefined;
        return ok(res, true);
      case 'setWebhook':
        if (typeof params.url !== 'string' || !/^https?:\/\//.test(params.url)) return error(res, 400, 'Bad Request: bad webhook: invalid URL');
        webhook = { url: params.url, secret: typeof params.secret_token === 'string' ? params.secret_token : undefined };
        return ok(res, true);
      case 'getUpdates':
        if (webhook) return error(res, 409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first");
        return getUpdates(params, req, res);
      case 'sendMessage':
        if (!params.text || String(params.text).length > 4096) return error(res, 400, 'Bad Request: message text is empty or too long');
        return ok(res, sentMessage(chatId, { text: params.text }));
      case 'sendDocument':
        if (!file && typeof params.document !== 'string') return error(res, 400, 'Bad Request: there is no document in the request');
        return ok(
          res,
          sentMessage(chatId, {
            document: { file_id: `doc${messageSeq}`, file_unique_id: `u${messageSeq}`, file_name: file?.filename },
            ...(params.caption ? { caption: params.caption } : {}),
          }),
        );
      case 'sendChatAction':
        return ok(res, true);
      default:
        return error(res, 404, 'Not Found: method not found');
    }
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => error(res, 500, 'Internal Server Error'));
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    apiRoot: `http://127.0.0.1:${port}`,
    token,
    bot,
    calls,
    callsOf: (method, chatId) => calls.filter((c) => c.method === method && (chatId === undefined || Number(c.params.chat_id) === chatId)),
    textsTo: (chatId) => calls.filter((c) => c.method === 'sendMessage' && Number(c.params.chat_id) === chatId).map((c) => String(c.params.text)),
    userSays(from, text, chat) {
      const update_id = updateSeq++;
      updates.push({
        update_id,
        message: {
          message_id: messageSeq++,
          date: Math.floor(Date.now() / 1000),
          from: { ...from, is_bot: false },
          chat: chat ?? { id: from.id, type: 'private', first_name: from.first_name, username: from.username },
          text,
        },
      });
      if (webhook) {
        // Webhook mode: push it, as Telegram does (it would retry later on a non-2xx answer).
        const target = webhook;
        const update = updates.pop()!;
        void fetch(target.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(target.secret ? { 'x-telegram-bot-api-secret-token': target.secret } : {}) },
          body: JSON.stringify(update),
        })
          .then((r) => pushes.push({ update_id, status: r.status }))
          .catch(() => pushes.push({ update_id, status: 0 }));
      }
      wake();
      return update_id;
    },
    fail(method, ...list) {
      faults.set(method, [...(faults.get(method) ?? []), ...list]);
    },
    unconfirmed: () => updates.length,
    webhook: () => webhook,
    pushes,
    async close() {
      wake();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
