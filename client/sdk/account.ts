/**
 * Typed client for the account service, over tRPC (`{url}/trpc`, superjson), for Node and the
 * browser alike: no Node-only imports, only `fetch` (global, or passed in).
 *
 * It keeps the token pair in a pluggable storage (memory by default; `localTokenStorage()` in
 * browsers) and refreshes it single-flight (docs/api.md, "Client SDK"):
 * however many calls find the access token expired at once, one refresh goes out and they all
 * wait for it. Refresh tokens are single use, so two refreshes of one token would end in a 401
 * for one caller — or, after 10 s, in the whole session being revoked as stolen.
 *
 *   const account = createAccountClient({ url: 'http://127.0.0.1:3000' });
 *   await account.signInAsGuest(deviceId);           // keep one newDeviceId() per install
 *   await account.signInAsGuest(deviceId, { captcha }); // when captchaConfig() says one is needed
 *   await account.requestEmailSignIn('me@example.com');
 *   await account.verifyEmail({ email: 'me@example.com', code: '123456' }); // upgrades the guest
 *   const me = await account.me();
 *   await account.trpc.tokens.me.query();   // every procedure, typed, with the access token
 */
import { createTRPCClient, httpLink, TRPCClientError, type TRPCLink } from '@trpc/client';
import { observable } from '@trpc/server/observable';
import superjson from 'superjson';
import type { AccountRouter } from '@contracts/account/router.js';
import type { TokenPair } from '@contracts/account/tokens.js';
import { isErrorCode, type ErrorCode } from '@contracts/errors.js';

export type { AccountRouter };

export type { TokenPair };

export interface StoredTokens {
  access_token: string;
  refresh_token: string;
  /** When the access token stops working, in ms since the epoch (client clock). */
  access_expires_at: number;
}

/** Where the pair lives between calls. May be async (e.g. a keychain in a native shell). */
export interface TokenStorage {
  get(): StoredTokens | null | Promise<StoredTokens | null>;
  set(tokens: StoredTokens | null): void | Promise<void>;
}

export function memoryTokenStorage(initial: StoredTokens | null = null): TokenStorage {
  let tokens = initial;
  return {
    get: () => tokens,
    set: (next) => {
      tokens = next;
    },
  };
}

/** `localStorage` (or any Web Storage) under `key`; tabs of one origin share the pair. */
export function localTokenStorage(
  key = 'account.tokens',
  storage: Pick<Storage, 'getItem' | 'setItem' | 'removeItem'> = globalThis.localStorage,
): TokenStorage {
  return {
    get() {
      const text = storage.getItem(key);
      if (!text) return null;
      try {
        const parsed = JSON.parse(text) as StoredTokens;
        return typeof parsed.access_token === 'string' && typeof parsed.refresh_token === 'string' ? parsed : null;
      } catch {
        return null;
      }
    },
    set(tokens) {
      if (tokens) storage.setItem(key, JSON.stringify(tokens));
      else storage.removeItem(key);
    },
  };
}

export interface AccountClientOptions {
  /** The account service's base address, e.g. `https://accounts.example.com`. */
  url: string;
  storage?: TokenStorage;
  fetch?: typeof fetch;
  /** Refresh this long before the access token expires (default 30 s). */
  refreshMarginMs?: number;
  /** Clock, for tests. */
  now?: () => number;
}

/**
 * How a call uses the stored access token (`context.auth` on any tRPC call):
 * `user` (default) sends it; `none` never does (sign-in, refresh, logout);
 * `guest-upgrade` sends it only when it is a guest's, so a sign-in attaches to that guest.
 */
export type AuthMode = 'user' | 'none' | 'guest-upgrade';

/** The machine code of an error answer (`INVALID_CODE`, `RATE_LIMITED`, …), or undefined. */
/** The catalogue code of a failed call (contracts/errors.ts); undefined for anything else. */
export function errorCode(error: unknown): ErrorCode | undefined {
  if (!(error instanceof TRPCClientError)) return undefined;
  const data = error.data as { code?: unknown } | undefined;
  return isErrorCode(data?.code) ? data.code : undefined;
}

function base64UrlJson(part: string): Record<string, unknown> | undefined {
  try {
    const base64 = part
      .replace(/-/g, '+')
      .replace(/_/g, '/')
      .padEnd(Math.ceil(part.length / 4) * 4, '=');
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/**
 * A device id for guest sign-in: 122 random bits (a UUID v4). The device id is the guest's only
 * credential, so the service refuses ids under 16 characters; store this one and reuse it.
 */
export const newDeviceId = (): string => crypto.randomUUID();

/** Options of the sign-in calls the service may guard with a CAPTCHA (see `captchaConfig`). */
export interface CaptchaOptions {
  /** The token the provider's widget produced; sent as `x-captcha-response`. */
  captcha?: string;
}

/** One claim of a token's payload, read (not verified): for what the client decides for itself. */
const claimOf = (accessToken: string, name: string): unknown => base64UrlJson(accessToken.split('.')[1] ?? '')?.[name];

/** A claim that must be a string, else undefined. */
const stringClaimOf = (accessToken: string, name: string): string | undefined => {
  const value = claimOf(accessToken, name);
  return typeof value === 'string' ? value : undefined;
};

/** Reads (does not verify) the `guest` claim: only used to decide whether to offer a guest upgrade. */
export const isGuestToken = (accessToken: string): boolean => claimOf(accessToken, 'guest') === true;

/**
 * Reads (does not verify) the session's assurance level (`aal` claim): `aal1` means the account has
 * a second factor this session has not passed yet — everything but `verifySecondFactor`, refresh
 * and logout answers 403 MFA_REQUIRED until it does. Undefined: the account had none at sign-in.
 */
export const assuranceLevel = (accessToken: string): 'aal1' | 'aal2' | undefined => {
  const aal = claimOf(accessToken, 'aal');
  return aal === 'aal1' || aal === 'aal2' ? aal : undefined;
};

/** Reads (does not verify) the session an access token belongs to (`sid` claim): the same across its rotations. */
export const sessionIdOf = (accessToken: string): string | undefined => stringClaimOf(accessToken, 'sid');

/** Reads (does not verify) the user an access token belongs to (`sub` claim). */
export const userIdOf = (accessToken: string): string | undefined => stringClaimOf(accessToken, 'sub');

/** How long a refresh that lost a race waits for the winner's pair to appear in shared storage. */
const LOST_RACE_WAIT_MS = 1_000;

export function createAccountClient(options: AccountClientOptions) {
  const storage = options.storage ?? memoryTokenStorage();
  const now = options.now ?? (() => Date.now());
  const margin = options.refreshMarginMs ?? 30_000;
  let inflight: Promise<StoredTokens | null> | null = null;

  const toStored = (pair: TokenPair): StoredTokens => ({
    access_token: pair.access_token,
    refresh_token: pair.refresh_token,
    access_expires_at: now() + pair.expires_in * 1000,
  });

  /** `after`, when it is a later pair of the session `before` belongs to (a rotation), else null. */
  const laterOfSession = (after: StoredTokens | null, before: StoredTokens): StoredTokens | null =>
    after && after.refresh_token !== before.refresh_token && sessionIdOf(after.access_token) === sessionIdOf(before.access_token) ? after : null;

  /**
   * Single flight: while one refresh runs, every caller joins it. A caller that saw tokens
   * which have been rotated since (by this client or, through shared storage, another tab)
   * takes the new ones instead of refreshing again. Tokens of another session (signed out, or
   * in again, meanwhile) are never handed to a caller of the one it saw, nor cleared by it.
   */
  function refreshTokens(seen?: StoredTokens): Promise<StoredTokens | null> {
    inflight ??= (async () => {
      const current = await storage.get();
      if (!current) return null;
      if (seen && current.refresh_token !== seen.refresh_token) return laterOfSession(current, seen);
      try {
        const pair = await trpc.tokens.refresh.mutate({ refresh_token: current.refresh_token }, { context: { auth: 'none' } });
        // Signed out (or in again) while the answer was on its way: the pair of the session that
        // was left must not come back. (A later pair of this session, stored by another tab, stands.)
        const meanwhile = await storage.get();
        if (meanwhile?.refresh_token !== current.refresh_token) return laterOfSession(meanwhile, current);
        const next = toStored(pair);
        await storage.set(next);
        return next;
      } catch (error) {
        // Another client on the same storage (another tab) may have rotated this token a moment
        // ago: the service then answers INVALID_REFRESH_TOKEN and the winner's pair is about to land.
        const replaced = async () => laterOfSession(await storage.get(), current);
        let winner = await replaced();
        for (let waited = 0; !winner && errorCode(error) === 'INVALID_REFRESH_TOKEN' && waited < LOST_RACE_WAIT_MS; waited += 50) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          winner = await replaced();
        }
        if (winner) return winner;
        const refused = error instanceof TRPCClientError && (error.data as { httpStatus?: number } | undefined)?.httpStatus === 401;
        if (refused && (await storage.get())?.refresh_token === current.refresh_token) await storage.set(null);
        throw error;
      }
    })().finally(() => {
      inflight = null;
    });
    return inflight;
  }

  /** The stored tokens with an access token good for at least `margin`, refreshing if needed. */
  async function freshTokens(): Promise<StoredTokens | null> {
    const tokens = await storage.get();
    if (!tokens) return null;
    if (tokens.access_expires_at - margin > now()) return tokens;
    return refreshTokens(tokens);
  }

  const authLink: TRPCLink<AccountRouter> =
    () =>
    ({ op, next }) =>
      observable((observer) => {
        let unsubscribe: (() => void) | undefined;
        let stopped = false;
        const mode = (op.context.auth as AuthMode | undefined) ?? 'user';
        const attempt = async (retried: boolean) => {
          const tokens = mode === 'none' ? null : await freshTokens();
          const sent = tokens && (mode === 'user' || isGuestToken(tokens.access_token)) ? tokens : null;
          if (stopped) return;
          const context = { ...op.context, authorization: sent ? `Bearer ${sent.access_token}` : undefined };
          const subscription = next({ ...op, context }).subscribe({
            next: (value) => observer.next(value),
            error: (error) => {
              // Our clock said fresh, the server's says expired: refresh once (single flight) and retry.
              if (!retried && sent && errorCode(error) === 'TOKEN_EXPIRED') {
                refreshTokens(sent).then(
                  (renewed) => (renewed ? attempt(true) : observer.error(error)),
                  () => observer.error(error),
                );
                return;
              }
              observer.error(error);
            },
            complete: () => observer.complete(),
          });
          unsubscribe = () => subscription.unsubscribe();
        };
        attempt(false).catch((error: unknown) => observer.error(TRPCClientError.from(error instanceof Error ? error : new Error(String(error)))));
        return () => {
          stopped = true;
          unsubscribe?.();
        };
      });

  const trpc = createTRPCClient<AccountRouter>({
    links: [
      authLink,
      httpLink({
        url: `${options.url.replace(/\/$/, '')}/trpc`,
        transformer: superjson,
        ...(options.fetch ? { fetch: options.fetch } : {}),
        headers: ({ op }) => {
          const authorization = op.context.authorization as string | undefined;
          const captcha = op.context.captcha as string | undefined;
          return { ...(authorization ? { authorization } : {}), ...(captcha ? { 'x-captcha-response': captcha } : {}) };
        },
      }),
    ],
  });

  const signedIn = async (pair: TokenPair) => {
    await storage.set(toStored(pair));
    return pair;
  };

  return {
    /** Every account procedure, typed; sends the access token unless `context: { auth: 'none' }`. */
    trpc,
    storage,

    /** `deviceId`: at least 16 characters, random or the platform's (`newDeviceId()`), the same on every sign-in of the device. */
    signInAsGuest: async (deviceId: string, options: CaptchaOptions = {}) =>
      signedIn(await trpc.auth.guest.signIn.mutate({ device_id: deviceId }, { context: { auth: 'none', captcha: options.captcha } })),

    /**
     * Always the same message, whether or not the address has an account. A signed-in guest asks with its token, so that its
     * verify upgrades it in place (only the account that asked for a mail is joined by it); `link: true` asks for whichever
     * account is signed in, full or guest (see linkEmail).
     */
    requestEmailSignIn: (email: string, options: CaptchaOptions & { link?: boolean } = {}) =>
      trpc.auth.email.request.mutate({ email }, { context: { auth: options.link ? 'user' : 'guest-upgrade', captcha: options.captcha } }),

    /** Whether guest and e-mail sign-in need a CAPTCHA token: `{provider: null}` when not. */
    captchaConfig: () => trpc.auth.captcha.config.query(undefined, { context: { auth: 'none' } }),

    /** `{token}` from the link or `{email, code}`. A signed-in guest is upgraded in place. */
    verifyEmail: async (input: { token: string } | { email: string; code: string }) =>
      signedIn(await trpc.auth.email.verify.mutate(input, { context: { auth: 'guest-upgrade' } })),

    /** Like verifyEmail, but attaches the address to whichever account is signed in (linking), full or guest. */
    linkEmail: async (input: { token: string } | { email: string; code: string }) =>
      signedIn(await trpc.auth.email.verify.mutate(input, { context: { auth: 'user' } })),

    /**
     * Trades a link or code with the signed-in account's token but keeps the pair it answers: when it belongs to another
     * account (a mail this account did not ask for signs in to the address's own account), the caller asks the person before
     * `useTokens` switches; `discardTokens` ends the held session instead.
     */
    verifyEmailHeld: (input: { token: string } | { email: string; code: string }) => trpc.auth.email.verify.mutate(input, { context: { auth: 'user' } }),

    /** Makes `pair` (from verifyEmailHeld) the stored session. */
    useTokens: (pair: TokenPair) => signedIn(pair),

    /** Ends the session of a held pair that is not used. */
    discardTokens: async (pair: TokenPair): Promise<void> => {
      await trpc.tokens.logout.mutate({ refresh_token: pair.refresh_token }, { context: { auth: 'none' } });
    },

    me: () => trpc.tokens.me.query(),

    /** The second step of a sign-in (`aal1` → `aal2`): a code from the authenticator app, or a recovery code. The new pair is stored. */
    verifySecondFactor: async (input: { code: string } | { recovery_code: string }) => signedIn(await trpc.auth.mfa.verify.mutate(input)),

    /** A valid access token for calls to other services (refreshed single-flight), or null when signed out. */
    accessToken: async () => (await freshTokens())?.access_token ?? null,

    /** Forces a refresh now (single flight). */
    refresh: () => refreshTokens(),

    isSignedIn: async () => (await storage.get()) !== null,

    /**
     * Ends this session; local tokens are dropped even when the service cannot be reached. The
     * stored pair is read as the call starts, so a caller may clear its own state right after.
     */
    async logout(): Promise<void> {
      const tokens = await storage.get();
      await storage.set(null);
      if (tokens) await trpc.tokens.logout.mutate({ refresh_token: tokens.refresh_token }, { context: { auth: 'none' } });
    },

    /** Ends every session of the user, everywhere. */
    async logoutAll(): Promise<void> {
      await trpc.tokens.logoutAll.mutate();
      await storage.set(null);
    },
  };
}

export type AccountClient = ReturnType<typeof createAccountClient>;
