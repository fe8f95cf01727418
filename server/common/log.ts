import { pino, type Logger } from 'pino';

export type { Logger };

/** JSON logs on stdout; `pretty` (LOG_PRETTY=1) is for people reading a terminal. */
export function createLogger(name: string, level: string, pretty = false): Logger {
  return pino({
    name,
    level,
    base: { service: name },
    redact: { paths: ['req.headers.authorization', '*.password', '*.secret'], censor: '[redacted]' },
    ...(pretty ? { transport: { target: 'pino-pretty' } } : {}),
  });
}
