/**
 * Every machine code an error answer (`{detail, code}`, docs/api.md "Errors and limits") can
 * carry, with its usual HTTP status and a default message: the one catalogue that the services
 * throw from (`AppError`'s code is an `ErrorCode`, so a misspelt code fails the type check), that
 * the web client switches on (client/web/src/errors.ts, exhaustive), and that docs/errors.md is
 * generated from (`npm run docs`). The `detail` of an answer is often more specific than the
 * message here. tRPC clients see the same code in `error.data.code`.
 */

export interface ErrorEntry {
  /** The status the code is answered with (a proxied or parser error may keep its own 4xx). */
  status: number;
  message: string;
}

/** Either service, the REST bridge and the HTTP shell. */
const COMMON = {
  BAD_REQUEST: { status: 400, message: 'The request is malformed' },
  VALIDATION_FAILED: { status: 400, message: 'The input does not match the schema; `issues` lists each field' },
  MALFORMED_JSON: { status: 400, message: 'The request body is not valid JSON' },
  MALFORMED_MULTIPART: { status: 400, message: 'The multipart/form-data body or its header is malformed' },
  TOO_MANY_PARTS: { status: 400, message: 'The form has too many fields' },
  UNAUTHORIZED: { status: 401, message: 'Missing or invalid credentials' },
  FORBIDDEN: { status: 403, message: 'Forbidden' },
  NOT_FOUND: { status: 404, message: 'Not found' },
  ROUTE_NOT_FOUND: { status: 404, message: 'No route for this method and path' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'The path exists but not with this method (see `Allow`)' },
  CONFLICT: { status: 409, message: 'The request conflicts with the current state' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'The request body is too large' },
  FIELD_TOO_LARGE: { status: 413, message: 'A form field is too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'The request body has the wrong Content-Type' },
  UNSUPPORTED_ENCODING: { status: 415, message: 'Unsupported content encoding' },
  UNSUPPORTED_CHARSET: { status: 415, message: 'Unsupported charset' },
  REQUEST_TIMEOUT: { status: 408, message: 'The request body did not arrive in time (REQUEST_BODY_TIMEOUT)' },
  RANGE_NOT_SATISFIABLE: { status: 416, message: 'The requested byte range is outside the file' },
  REQUEST_ABORTED: { status: 499, message: 'The client closed the request' },
  INTERNAL: { status: 500, message: 'Internal error (logged with the request id)' },
  NOT_IMPLEMENTED: { status: 501, message: 'This service does not offer this operation' },
  STORE_UNAVAILABLE: { status: 503, message: 'The store is unavailable; try again shortly' },
  NOT_READY: { status: 503, message: 'The service is not ready' },
  SHUTTING_DOWN: { status: 503, message: 'The service is shutting down' },
} as const satisfies Record<string, ErrorEntry>;

/** The agent API (and the account service's proxy to it, which passes them on). */
const AGENT = {
  INVALID_AGENT_SECRET: { status: 401, message: 'Missing or invalid agent secret' },
  INVALID_WEBHOOK_SECRET: { status: 401, message: 'Missing or invalid webhook secret' },
  CHAT_NOT_FOUND: { status: 404, message: 'No such chat' },
  RUN_NOT_ACTIVE: { status: 409, message: 'No reply is running in this chat' },
  RUN_ACTIVE: { status: 409, message: 'A reply is running in this chat: stop it first' },
  MESSAGE_NOT_FOUND: { status: 404, message: 'No such user message in this chat' },
  INVALID_PATH: { status: 400, message: 'The workspace path is not valid' },
  NOT_A_FILE: { status: 400, message: 'The path names a directory, not a file' },
  MISSING_FILE: { status: 400, message: 'The multipart field `file` is required' },
  MISSING_FILE_NAME: { status: 400, message: 'The file name is required (header X-File-Name)' },
  UNSUPPORTED_UPLOAD_BODY: { status: 400, message: 'Upload body must be multipart/form-data (REST) or application/octet-stream (tRPC)' },
  FORBIDDEN_PATH: { status: 403, message: 'The path is outside the workspace or names a protected file' },
  FILE_NOT_FOUND: { status: 404, message: 'No such file in the workspace' },
  UPLOAD_STALLED: { status: 408, message: 'The upload delivered under 1 KiB in the idle window' },
  FILE_CHANGED: { status: 409, message: 'The file changed while it was being read' },
  NOT_A_DIRECTORY: { status: 409, message: 'The target path is a file, not a directory' },
  NAME_TAKEN: { status: 409, message: 'No free name for the upload in the target directory' },
  FILE_EXISTS: { status: 409, message: 'A file or directory of that name exists (send overwrite: true to replace a file)' },
  QUOTA_EXCEEDED: { status: 507, message: 'The workspace is full; delete files to make room' },
  SUBAGENT_DEPTH: { status: 403, message: 'Subagents cannot start subagents' },
  SUBAGENT_NOT_FOUND: { status: 404, message: 'No such subagent run' },
  SUBAGENT_NOT_RUNNING: { status: 409, message: 'The subagent run is not running' },
  SUBAGENT_LIMIT: { status: 429, message: 'Too many subagents are running' },
  CONTACT_NOT_FOUND: { status: 404, message: 'No such messenger contact' },
  INVALID_SCHEDULE: {
    status: 400,
    message:
      'The schedule is not valid: `at` past or malformed, `cron` not five fields or never due, an unknown `timezone`, or runs closer together than allowed',
  },
  TASK_NOT_FOUND: { status: 404, message: 'No such task' },
  TASK_LIMIT: { status: 403, message: 'The agent holds as many tasks as it may (TASKS_MAX); delete one first' },
  TASK_FINISHED: { status: 409, message: 'The one-shot task has run; create a new one' },
} as const satisfies Record<string, ErrorEntry>;

/** The account API. */
const ACCOUNT = {
  /** What a sandboxed agent (or a command it runs) hears from its egress gateway. */
  EGRESS_DENIED: { status: 403, message: "The host is not on this service's egress allowlist" },
  EGRESS_ROUTE_REFUSED: { status: 403, message: 'The model host answers only POST to its generation endpoints through the egress gateway' },
  EGRESS_BUSY: { status: 503, message: 'Too many connections through the egress gateway at once' },
  EGRESS_BODY_TOO_LARGE: { status: 413, message: 'The request body is over the egress gateway limit' },
  EGRESS_UPSTREAM_FAILED: { status: 502, message: 'The allowed host did not answer the egress gateway' },
  EGRESS_UNAUTHENTICATED: { status: 407, message: "The egress gateway's TCP address serves agents that present their own token" },
  /** The agents' web tools (agents/egress/web.ts): what `web_fetch` and `web_search` hear from the gateway. */
  WEB_DISABLED: { status: 403, message: "The operator has turned the agents' web tools off (AGENT_WEB=off)" },
  WEB_URL_REFUSED: { status: 400, message: 'Only http and https URLs without credentials are fetched' },
  WEB_ADDRESS_REFUSED: { status: 403, message: 'The URL leads to an address that is not public, or to this service itself' },
  WEB_DOMAIN_REFUSED: { status: 403, message: "The domain is not allowed by the operator's web policy (AGENT_WEB_ALLOW_DOMAINS, AGENT_WEB_DENY_DOMAINS)" },
  WEB_DAILY_LIMIT: { status: 429, message: "The user's web fetches or searches for today are spent" },
  WEB_TOO_MANY_REDIRECTS: { status: 502, message: 'The page redirected more times than the gateway follows' },
  WEB_TIMEOUT: { status: 504, message: 'The page or the search provider did not answer within the time cap' },
  WEB_FETCH_FAILED: { status: 502, message: 'The page could not be fetched' },
  WEB_SEARCH_NOT_CONFIGURED: { status: 404, message: 'No search provider is configured (WEB_SEARCH)' },
  WEB_SEARCH_FAILED: { status: 502, message: 'The search provider did not give an answer the gateway could read' },
  MISSING_TOKEN: { status: 401, message: 'Missing or malformed Authorization header' },
  INVALID_TOKEN: { status: 401, message: 'The token is not valid' },
  TOKEN_EXPIRED: { status: 401, message: 'The access token has expired: refresh it' },
  SESSION_REVOKED: { status: 401, message: 'The session has ended' },
  INVALID_REFRESH_TOKEN: { status: 401, message: 'The refresh token is no longer valid' },
  REFRESH_TOKEN_REUSED: { status: 401, message: 'This refresh token was already used; the session has been ended' },
  INVALID_API_KEY: { status: 401, message: 'The API key is unknown, revoked or expired' },
  INVALID_AUTH_CODE: { status: 401, message: 'The auth code is invalid, expired or already used' },
  INVALID_ID_TOKEN: { status: 401, message: 'The ID token is not valid' },
  INVALID_LINK: { status: 401, message: 'The sign-in link is invalid, expired or already used' },
  INVALID_CODE: { status: 401, message: 'The code is wrong, expired or already used' },
  INVALID_PASSKEY: { status: 401, message: 'The passkey could not be verified' },
  INVALID_CHALLENGE: { status: 401, message: 'The passkey challenge is unknown, expired or already used' },
  INVALID_NONCE: { status: 401, message: 'Unknown or already used nonce: request a new challenge' },
  NONCE_EXPIRED: { status: 401, message: 'The challenge has expired: request a new one' },
  ADDRESS_MISMATCH: { status: 401, message: 'The challenge was issued for another address' },
  CHALLENGE_INVALID: { status: 401, message: 'The challenge is no longer valid for this service' },
  INVALID_SIGNATURE: { status: 401, message: 'The signature does not prove ownership of this address' },
  CAPTCHA_REQUIRED: { status: 400, message: 'Complete the CAPTCHA check and send its token (x-captcha-response)' },
  CAPTCHA_INVALID: { status: 400, message: 'The CAPTCHA check was not passed or has expired' },
  BOT_TOKEN_INVALID: { status: 400, message: 'Telegram refused this bot token' },
  REAUTH_REQUIRED: { status: 403, message: 'This needs a recent sign-in' },
  MFA_REQUIRED: {
    status: 403,
    message: 'This needs a session that passed the second factor: POST /auth/mfa/verify with a code (or enrol one first, for admin routes)',
  },
  USER_BANNED: { status: 403, message: 'This account is banned; `expires_at` says until when (null: until lifted)' },
  GUEST_LIMITED: { status: 403, message: 'Guests cannot use this' },
  CONNECTORS_NOT_FOR_GUESTS: { status: 403, message: 'Connectors are for full accounts: sign in with e-mail, a provider or a wallet first' },
  CONNECTORS_DISABLED: { status: 403, message: 'This service does not offer connectors (CONNECTORS=off)' },
  ACCOUNT_NOT_FOUND: { status: 404, message: 'No such account' },
  IDENTITY_NOT_FOUND: { status: 404, message: 'No such sign-in method on this account' },
  SESSION_NOT_FOUND: { status: 404, message: 'No such session on this account' },
  PASSKEY_NOT_FOUND: { status: 404, message: 'No such passkey on this account' },
  MFA_FACTOR_NOT_FOUND: { status: 404, message: 'No such second factor on this account' },
  API_KEY_NOT_FOUND: { status: 404, message: 'No such live API key' },
  AGENT_NOT_FOUND: { status: 404, message: 'No such agent' },
  BOT_NOT_CONNECTED: { status: 404, message: 'Connect a bot first' },
  CONNECTOR_NOT_FOUND: { status: 404, message: 'No such connector on this account' },
  CONNECTOR_URL_REFUSED: { status: 400, message: 'Connectors must be https URLs on public addresses, at an origin this service allows' },
  CONNECTOR_NAME_TAKEN: { status: 409, message: 'This account already has a connector of that name' },
  CONNECTORS_LIMIT: { status: 409, message: 'This account has as many connectors as it may (CONNECTORS_MAX_PER_USER)' },
  CONNECTOR_UNREACHABLE: { status: 502, message: 'The MCP server did not answer as one' },
  CONNECTOR_SIGN_IN_FAILED: {
    status: 400,
    message: "The connector's sign-in link is unknown, expired, used or was opened in another browser, or the provider refused it",
  },
  WEBHOOK_NOT_FOUND: { status: 404, message: 'No such webhook' },
  WEBHOOK_DELIVERY_NOT_FOUND: { status: 404, message: 'No such webhook delivery' },
  WEBHOOK_URL_FORBIDDEN: { status: 400, message: 'Webhook endpoints must be http(s) URLs on public addresses' },
  WEBHOOK_DISABLED: { status: 409, message: 'The webhook endpoint is disabled; enable it first' },
  IDENTITY_IN_USE: { status: 409, message: 'This sign-in method already belongs to another account' },
  SELF_ACTION: { status: 409, message: 'An admin cannot ban, delete or demote their own account' },
  LAST_ADMIN: { status: 409, message: 'The last admin cannot be banned, deleted or demoted' },
  LAST_IDENTITY: { status: 409, message: 'This is the only way to sign in to this account' },
  MFA_ALREADY_ENROLLED: { status: 409, message: 'This account already has an authenticator app; remove it before adding another' },
  MFA_ALREADY_CONFIRMED: { status: 409, message: 'This second factor is already confirmed' },
  MFA_NOT_ENROLLED: { status: 409, message: 'This account has no confirmed second factor to verify' },
  AGENT_EXISTS: { status: 409, message: 'An agent with this name (or for this user) already exists' },
  RATE_LIMITED: { status: 429, message: 'Too many requests; see Retry-After' },
  GUEST_SIGNUPS_PAUSED: { status: 429, message: 'New guest accounts are paused for a while; see Retry-After' },
  GUEST_QUOTA: { status: 429, message: "The guest's daily messages are used up" },
  MFA_CODE_ENTRY_PAUSED: { status: 429, message: 'Too many wrong second-factor codes for this account; see Retry-After' },
  CODE_ENTRY_PAUSED: { status: 429, message: 'Too many wrong codes for this address: code entry is paused; see Retry-After (the link still works)' },
  BUDGET_EXCEEDED: { status: 429, message: 'The model budget is spent until it resets; see Retry-After' },
  AGENT_UNREACHABLE: { status: 502, message: 'Your agent did not answer; try again in a moment' },
  PROVIDER_UNAVAILABLE: { status: 502, message: 'The sign-in provider could not be reached' },
  WALLET_RPC_FAILED: { status: 502, message: "The chain's RPC endpoint failed while verifying a smart-wallet signature" },
  TELEGRAM_UNAVAILABLE: { status: 502, message: 'Telegram could not be reached' },
  TELEGRAM_WEBHOOK_REFUSED: { status: 502, message: 'Telegram did not accept the webhook' },
  AGENT_UNAVAILABLE: { status: 503, message: 'The agent cannot be started or reached now' },
  TOO_MANY_STREAMS: { status: 429, message: 'Too many streams open at once for this account; close one first' },
  TOO_MANY_AGENT_REQUESTS: { status: 429, message: "Too many requests to this account's agent at once; wait for one to finish" },
  AGENT_STARTING: { status: 503, message: 'The agent is still starting; try again shortly' },
  AGENT_CAPACITY: { status: 503, message: 'Every agent the service can run is working; try again shortly' },
  CAPTCHA_UNAVAILABLE: { status: 503, message: 'The CAPTCHA check cannot be made right now' },
  PROVIDER_NOT_CONFIGURED: { status: 503, message: 'The sign-in provider is not configured' },
  SMART_WALLET_UNSUPPORTED: { status: 503, message: 'Smart-contract wallet signatures need an RPC endpoint, which is not configured' },
} as const satisfies Record<string, ErrorEntry>;

/** The catalogue by area, in the order docs/errors.md lists them. */
export const ERROR_AREAS = { common: COMMON, agent: AGENT, account: ACCOUNT } as const;

export const ERRORS: Readonly<Record<ErrorCode, ErrorEntry>> = { ...COMMON, ...AGENT, ...ACCOUNT };

export type ErrorCode = keyof typeof COMMON | keyof typeof AGENT | keyof typeof ACCOUNT;

export const isErrorCode = (value: unknown): value is ErrorCode => typeof value === 'string' && Object.hasOwn(ERRORS, value);
