/**
 * A real SMTP sink on loopback (smtp-server) that parses every message with mailparser, for
 * tests of code that sends mail. smtp-server's built-in certificate has expired, so STARTTLS is
 * disabled here and the service's SMTP_URL carries `?ignoreTLS=true`.
 */
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface SmtpSink {
  port: number;
  /** SMTP_URL for the service under test. */
  url: string;
  messages: ParsedMail[];
  /** Resolves with the next message to `to` that was not taken yet (waits up to `timeoutMs`). */
  next(to: string, timeoutMs?: number): Promise<ParsedMail>;
  close(): Promise<void>;
}

export async function startSmtpSink(opts: { delayMs?: number } = {}): Promise<SmtpSink> {
  const messages: ParsedMail[] = [];
  const taken = new Set<ParsedMail>();
  const waiters = new Set<() => void>();
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    authOptional: true,
    logger: false,
    onData(stream, _session, callback) {
      simpleParser(stream).then(
        async (mail) => {
          if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
          messages.push(mail);
          for (const wake of waiters) wake();
          callback();
        },
        (error: Error) => callback(error),
      );
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as { port: number }).port;
  const recipient = (mail: ParsedMail) =>
    (Array.isArray(mail.to) ? mail.to : mail.to ? [mail.to] : []).flatMap((a) => a.value.map((v) => v.address?.toLowerCase()));
  return {
    port,
    url: `smtp://127.0.0.1:${port}/?ignoreTLS=true`,
    messages,
    next(to, timeoutMs = 10_000) {
      const find = () => messages.find((m) => !taken.has(m) && recipient(m).includes(to.toLowerCase()));
      return new Promise((resolve, reject) => {
        const check = () => {
          const mail = find();
          if (!mail) return false;
          taken.add(mail);
          waiters.delete(check);
          clearTimeout(timer);
          resolve(mail);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no mail to ${to} within ${timeoutMs} ms`));
        }, timeoutMs);
        if (!check()) waiters.add(check);
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The link token and the code of a sign-in mail. */
export function signInSecrets(mail: ParsedMail): { link: string; token: string; code: string } {
  const text = mail.text ?? '';
  const link = /(https?:\/\/\S+\/auth\/verify\?token=([A-Za-z0-9_-]+))/.exec(text);
  const code = /\b(\d{6})\b/.exec(text);
  if (!link || !code) throw new Error(`not a sign-in mail: ${text}`);
  return { link: link[1]!, token: link[2]!, code: code[1]! };
}
