/**
 * How the web client talks to the services:
 * - `api`: the account service over tRPC (queries and mutations), through the client SDK, which
 *   sends the access token and refreshes it single-flight when it expires (silently);
 * - `live`: tRPC subscriptions (chat streams) over SSE, with the same fresh token;
 * - `agentFetch` / `agentUpload`: the REST proxy `/api/v1/agent/*` for what is bytes (file
 *   downloads and uploads) or not proxied over tRPC (subagents, messenger, pending).
 * When the session cannot be renewed, `onSessionLost` handlers run (main.ts shows sign-in).
 */
import { createTRPCClient, httpSubscriptionLink, TRPCClientError } from '@trpc/client';
import { EventSource } from 'eventsource';
import superjson from 'superjson';
import { assuranceLevel, createAccountClient, errorCode } from '../../sdk/account.js';
import type { AccountRouter } from '@contracts/account/router.js';
import { isErrorCode } from '@contracts/errors.js';
import { retryingWhenBusy } from './busy.js';
import { wordingFor, type ClientErrorCode } from './errors.js';
import { clearTokens, currentSessionId, loadTokens, tokenStorage } from './session.js';

export { errorCode };

/** Every call waits and retries while the service is at its running-agent cap (busy.ts). */
const busyAwareFetch = retryingWhenBusy((input, init) => fetch(input, init));

export const account = createAccountClient({ url: location.origin, storage: tokenStorage, fetch: busyAwareFetch });
export const api = account.trpc;

let lostHandler: () => void = () => undefined;
/** What to do when the session is gone (refresh refused): main.ts shows sign-in with a notice. */
export function onSessionLost(handler: () => void): void {
  lostHandler = handler;
}
/**
 * The session is gone: forget it and show sign-in. `of`: the session the failed call (or the view
 * that made it) belonged to. A failure of a session this browser has since left for another one
 * (signed out and in again while the call was on its way) must not end the new one.
 */
export function sessionLost(of: string | null): void {
  const current = currentSessionId();
  if (current !== null && current !== of) return;
  clearTokens();
  lostHandler();
}

/**
 * A fresh access token, or null when the session is gone (the handler has run). A refresh that
 * could not reach the service, or that it could not answer (offline, a 5xx, a 429), throws: the
 * session may well be alive, and the next try can tell.
 */
export async function bearer(): Promise<string | null> {
  const session = currentSessionId();
  try {
    const token = await account.accessToken();
    if (!token) sessionLost(session);
    return token;
  } catch (error) {
    if (!isSessionError(error)) throw error;
    sessionLost(session);
    return null;
  }
}

/** Subscriptions: SSE with the Authorization header (a fetch-based EventSource), token fresh on every (re)connect. */
export const live = createTRPCClient<AccountRouter>({
  links: [
    httpSubscriptionLink({
      url: '/trpc',
      transformer: superjson,
      EventSource,
      eventSourceOptions: {
        fetch: async (input: string | URL | Request, init?: RequestInit) => {
          const token = await bearer();
          if (!token) return new Response(null, { status: 401 });
          return busyAwareFetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), authorization: `Bearer ${token}` } });
        },
      },
    }),
  ],
});

/** A call failed because the session is gone (401 after the SDK's own refresh): go to sign-in. */
export function isSessionError(error: unknown): boolean {
  if (!(error instanceof TRPCClientError)) return false;
  const status = (error.data as { httpStatus?: number } | undefined)?.httpStatus;
  return status === 401 && errorCode(error) !== 'INVALID_CODE' && errorCode(error) !== 'INVALID_LINK';
}

/** The documented agent REST paths through the account's proxy: `/api/v1/agent` + path. */
export const agentUrl = (path: string) => `/api/v1/agent${path}`;

/** Workspace path → URL path, each segment encoded once. */
export const filePath = (path: string) => path.split('/').map(encodeURIComponent).join('/');

/** fetch through the proxy with the access token; on TOKEN_EXPIRED one refresh and retry; a lost session → sign-in. */
export async function agentFetch(path: string, init: RequestInit = {}): Promise<Response> {
  const session = currentSessionId();
  for (let attempt = 0; ; attempt++) {
    const token = await bearer();
    if (!token) throw new ApiError(401, 'SESSION_LOST', 'Your session has ended. Please sign in again.');
    const res = await busyAwareFetch(agentUrl(path), {
      ...init,
      headers: { ...Object.fromEntries(new Headers(init.headers)), authorization: `Bearer ${token}` },
    });
    if (res.status !== 401) return res;
    const body = (await res
      .clone()
      .json()
      .catch(() => ({}))) as { code?: unknown };
    if (body.code === 'TOKEN_EXPIRED' && attempt === 0) {
      await account.refresh().catch(() => null);
      continue;
    }
    sessionLost(session);
    throw new ApiError(401, isErrorCode(body.code) ? body.code : 'UNAUTHORIZED', 'Your session has ended. Please sign in again.');
  }
}

/** A non-2xx REST answer: `{detail, code}` (docs/api.md, "Errors and limits") plus Retry-After when rate limited. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ClientErrorCode,
    message: string,
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

export async function apiError(res: Response): Promise<ApiError> {
  const body = (await res.json().catch(() => ({}))) as { detail?: string; code?: unknown };
  const retry = Number(res.headers.get('retry-after'));
  return new ApiError(
    res.status,
    isErrorCode(body.code) ? body.code : `HTTP_${res.status}`,
    body.detail ?? `The request failed (${res.status})`,
    Number.isFinite(retry) && retry > 0 ? retry : undefined,
  );
}

/** JSON from the proxy, or an ApiError. */
export async function agentJson<T>(path: string, init: RequestInit = {}): Promise<T> {
  const res = await agentFetch(path, init);
  if (!res.ok) throw await apiError(res);
  return (await res.json()) as T;
}

/** Seconds to wait, when the failure is a rate limit that says so. */
export function retryAfter(error: unknown): number | undefined {
  if (error instanceof ApiError) return error.retryAfter;
  if (error instanceof TRPCClientError) {
    const response = (error.meta as { response?: Response } | undefined)?.response;
    const value = Number(response?.headers.get('retry-after'));
    return Number.isFinite(value) && value > 0 ? value : undefined;
  }
  return undefined;
}

/** A readable message for any failure a call can end in. */
export function errorMessage(error: unknown): string {
  const code = error instanceof ApiError ? error.code : errorCode(error);
  const wording = code === undefined ? null : wordingFor(code);
  if (wording !== null) return wording;
  if (error instanceof TRPCClientError && /fetch|network/i.test(error.message)) return 'The service cannot be reached. Check your connection.';
  return error instanceof Error ? error.message : 'Something went wrong';
}

export const signedIn = () => loadTokens() !== null;

/** Signed in with one factor of two: the page is the second step (mfa/second-step.ts) until it is passed. */
export function awaitingSecondFactor(): boolean {
  const tokens = loadTokens();
  return tokens !== null && assuranceLevel(tokens.access_token) === 'aal1';
}

let secondStepHandler: () => void = () => undefined;
/** What to do when the session turns out to wait for its second factor: main.ts shows the second step. */
export function onSecondStepNeeded(handler: () => void): void {
  secondStepHandler = handler;
}

/**
 * A call answered 403 MFA_REQUIRED. Either the page needs an `aal2` session it does not have (the
 * admin page of an admin without a factor: the message says so), or this session was held at
 * `aal1` because the account enrolled a factor elsewhere: a refresh brings a token that says so,
 * and the second step is shown.
 */
export async function secondFactorRequired(): Promise<void> {
  if (!awaitingSecondFactor()) await account.refresh().catch(() => null);
  if (awaitingSecondFactor()) secondStepHandler();
}
