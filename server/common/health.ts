/**
 * Liveness and readiness for load balancers and orchestrators, on both services:
 * - `GET /healthz`: the process answers (nothing else is checked, so a slow store never gets a
 *   healthy process restarted);
 * - `GET /readyz`: every store the service needs answers a trivial query within a bound;
 *   otherwise 503 with the usual error body and which check failed, so traffic goes elsewhere
 *   until it is back.
 * Both are public and cheap; neither says more than the names of the checks.
 */
import type { IRouter } from 'express';

/** A readiness check: resolves when the dependency answers. */
export type ReadinessCheck = () => Promise<unknown>;

const CHECK_TIMEOUT_MS = 2_000;

function withTimeout(check: ReadinessCheck): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    Promise.resolve().then(check),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error('timed out')), CHECK_TIMEOUT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** `stopping`: once aborted (SIGTERM), /readyz answers 503 SHUTTING_DOWN so that traffic moves elsewhere while in-flight work ends. */
export function mountHealthRoutes(app: IRouter, checks: Record<string, ReadinessCheck>, stopping?: AbortSignal): void {
  app.get('/healthz', (_req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (req, res) => {
    if (stopping?.aborted) {
      res.setHeader('Cache-Control', 'no-store');
      res.setHeader('Retry-After', '5');
      res.status(503).json({ detail: 'Shutting down', code: 'SHUTTING_DOWN' });
      return;
    }
    const names = Object.keys(checks);
    const results = await Promise.allSettled(names.map((name) => withTimeout(checks[name]!)));
    const state = Object.fromEntries(names.map((name, i) => [name, results[i]!.status === 'fulfilled' ? 'ok' : 'failed']));
    const failed = names.filter((name) => state[name] === 'failed');
    res.setHeader('Cache-Control', 'no-store');
    if (failed.length === 0) {
      res.json({ status: 'ready', checks: state });
      return;
    }
    for (const [i, name] of names.entries()) {
      const result = results[i]!;
      if (result.status === 'rejected') req.log.warn({ check: name, err: result.reason }, 'readiness check failed');
    }
    res.setHeader('Retry-After', '5');
    res.status(503).json({ detail: `Not ready: ${failed.join(', ')} unavailable`, code: 'NOT_READY', checks: state });
  });
}
