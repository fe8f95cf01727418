/**
 * Model tokens: read from each model answer as it passes through the egress gateway, counted per
 * user and day (UTC) in the account store, and held against the daily budgets
 * (MODEL_DAILY_TOKENS for accounts, MODEL_DAILY_TOKENS_GUEST per guest,
 * MODEL_DAILY_TOKENS_GUESTS_TOTAL for all guests together; 0 or unset: no ceiling).
 *
 * The gateway sees every model call of a local agent, so no agent can spend past its owner's
 * budget by skipping a report. Usage is known only once an answer is complete, so each call first
 * reserves what it may cost (`reserve`: its max_tokens plus a bound on its prompt) and settles
 * with the real figures when its answer ends. A call is admitted only while the tokens spent plus
 * those held by calls in flight are under the ceiling, so calls in parallel pass it by at most one
 * call (docs/security.md, "Model budget: calls in flight are reserved").
 *
 * Each call is also counted by its source (chat, heartbeat, task, subagent: what the agent says it
 * is for). A proactive call (heartbeat, task) no person waits for is held to a stricter rule: it is
 * admitted only when all it may cost fits under the ceiling, so proactive turns never take the
 * budget past it; and an agent asks (`proactive`) before such a turn whether one may start at all.
 */
import { PROACTIVE_SOURCES, type ModelSource, type ProactiveBudget } from '@contracts/agent/model-source.js';
import { AppError } from '../../../common/errors.js';
import type { HotSql } from '../../hot-sql.js';
import type { GenerationEndpoint } from './model-routes.js';

export interface TokenUsage {
  tokensIn: number;
  tokensOut: number;
}

/** Usage figures a JSON object of a provider's answer carries (OpenAI chat and responses, Anthropic). */
function usageIn(value: unknown): Partial<TokenUsage> {
  if (!value || typeof value !== 'object') return {};
  type Usage = Record<string, unknown>;
  const o = value as { type?: unknown; usage?: Usage; response?: { usage?: Usage }; message?: { usage?: Usage } };
  const u = o.type === 'response.completed' ? o.response?.usage : o.type === 'message_start' ? o.message?.usage : o.usage;
  if (!u || typeof u !== 'object') return {};
  const count = (n: unknown) => (typeof n === 'number' && Number.isFinite(n) && n >= 0 ? n : undefined);
  return { tokensIn: count(u.prompt_tokens ?? u.input_tokens), tokensOut: count(u.completion_tokens ?? u.output_tokens) };
}

/** Longest line (or JSON body) examined; anything longer carries no usage worth the memory. */
const MAX_LINE = 1024 * 1024;

/**
 * Reads usage out of an answer as it streams past, SSE or plain JSON. Figures are cumulative
 * within one answer (Anthropic repeats the output count as it grows), so the largest one wins.
 */
export class UsageScanner {
  readonly usage: TokenUsage = { tokensIn: 0, tokensOut: 0 };
  private pending = '';
  private overflow = false;

  push(chunk: Buffer | string): void {
    this.pending += chunk.toString();
    let end: number;
    while ((end = this.pending.indexOf('\n')) >= 0) {
      this.line(this.pending.slice(0, end));
      this.pending = this.pending.slice(end + 1);
    }
    if (this.pending.length > MAX_LINE) {
      this.pending = '';
      this.overflow = true;
    }
  }

  /** The answer is complete: a plain JSON body is read here. */
  end(): TokenUsage {
    if (!this.overflow) this.line(this.pending);
    this.pending = '';
    return this.usage;
  }

  private line(raw: string): void {
    const text = raw.startsWith('data:') ? raw.slice(5).trim() : raw.trim();
    if (!text.includes('usage') || !text.startsWith('{')) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return;
    }
    const found = usageIn(parsed);
    this.usage.tokensIn = Math.max(this.usage.tokensIn, found.tokensIn ?? 0);
    this.usage.tokensOut = Math.max(this.usage.tokensOut, found.tokensOut ?? 0);
  }
}

export interface BudgetLimits {
  /** Tokens per day for a full account; 0: no ceiling. */
  account: number;
  guest: number;
  /** All guests together, per day; 0: no ceiling. */
  guestsTotal: number;
}

/** Today's tokens of one user by what the calls were for. */
export type TokensBySource = Record<ModelSource, number>;

export interface BudgetStatus {
  used: number;
  /** Null: no ceiling. */
  limit: number | null;
  resets_at: string;
  by_source: TokensBySource;
}

const GUESTS = 'guests';

/** How long a proactive ask's read of the user and their usage is reused. */
const PROACTIVE_READ_MS = 1_000;

interface ProactiveRead {
  user: BudgetUser;
  /** Today's tokens by scope (the user's id, `guests`). */
  used: Map<string, number>;
}
const dayOf = (now: Date) => now.toISOString().slice(0, 10);
const nextMidnight = (now: Date) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));

/** What one admitted model call holds of its owner's budgets until its answer ends. */
export interface Reservation {
  guest: boolean;
  /** Records the call's usage and gives its hold back; once. */
  settle(usage: TokenUsage): Promise<void>;
}

export interface BudgetUser {
  guest: boolean;
  dailyTokens?: number | null | undefined;
  /** A guest's daily chat messages when an operator set them (proxy/guest-policy.ts); null: the default. */
  guestMessagesPerDay?: number | null | undefined;
}

export class ModelBudget {
  /** Tokens held by calls in flight on this instance, per scope and day (`scope|day`). */
  private readonly held = new Map<string, number>();
  /** Admissions one at a time per scope, so that each sees the holds of those before it. */
  private readonly admissions = new Map<string, Promise<unknown>>();
  /** What proactive asks judge by, per user, for PROACTIVE_READ_MS (`proactiveRead`). */
  private readonly proactiveReads = new Map<string, { at: number; day: string; read: Promise<ProactiveRead> }>();

  constructor(
    private readonly sql: HotSql,
    private readonly limits: BudgetLimits,
    /** Whether the user is a guest, and their own daily ceiling when an operator set one (admin/users.ts; null: the default). */
    private readonly budgetUser: (userId: string) => Promise<BudgetUser>,
    private readonly onRecord?: (usage: TokenUsage, guest: boolean) => void,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  private async used(scope: string, day: string): Promise<number> {
    const rows = await this.sql<{ used: string | number }>`SELECT tokens_in + tokens_out AS used FROM model_usage WHERE scope = ${scope} AND day = ${day}`;
    return Number(rows[0]?.used ?? 0);
  }

  /** Today's usage and ceiling of one user, with the tokens by source. */
  async status(userId: string): Promise<BudgetStatus> {
    const now = this.clock();
    const limit = this.ownLimit(await this.budgetUser(userId));
    type Row = { used: string | number; chat: string | number; heartbeat: string | number; task: string | number; subagent: string | number };
    const [row] = await this.sql<Row>`
      SELECT tokens_in + tokens_out AS used, tokens_chat AS chat, tokens_heartbeat AS heartbeat, tokens_task AS task, tokens_subagent AS subagent
        FROM model_usage WHERE scope = ${userId} AND day = ${dayOf(now)}`;
    return {
      used: Number(row?.used ?? 0),
      limit: limit || null,
      resets_at: nextMidnight(now).toISOString(),
      by_source: { chat: Number(row?.chat ?? 0), heartbeat: Number(row?.heartbeat ?? 0), task: Number(row?.task ?? 0), subagent: Number(row?.subagent ?? 0) },
    };
  }

  /**
   * Whether a proactive turn may start now: only when a call of `tokens` would fit whole under
   * every ceiling that applies, with what calls in flight hold (a turn that would cross the budget
   * does not start; docs/agent.md, "Proactive turns and the budget").
   */
  async proactive(userId: string, tokens: number): Promise<ProactiveBudget> {
    const now = this.clock();
    const day = dayOf(now);
    const { user, used } = await this.proactiveRead(userId, day, now.getTime());
    const usedOf = (scope: string) => used.get(scope) ?? 0;
    const allowed = this.scopes(userId, user).every(({ scope, limit }) => usedOf(scope) + (this.held.get(`${scope}|${day}`) ?? 0) + tokens <= limit);
    return { allowed, used: usedOf(userId), limit: this.ownLimit(user) || null, resets_at: nextMidnight(now).toISOString() };
  }

  /**
   * The user and today's usage a proactive ask judges by, read at most once per user a second:
   * an agent that asks in a loop costs the store no more (docs/agent.md, "Proactive turns and the
   * budget"). The holds of calls in flight are this instance's memory, read fresh each time, and a
   * spend recorded here drops the user's read, so it shows in the next answer.
   */
  private proactiveRead(userId: string, day: string, at: number): Promise<ProactiveRead> {
    const cached = this.proactiveReads.get(userId);
    if (cached && cached.day === day && at - cached.at < PROACTIVE_READ_MS) return cached.read;
    // Swept on a miss: the map holds no more than the users who asked within the last second.
    for (const [id, entry] of this.proactiveReads) if (at - entry.at >= PROACTIVE_READ_MS) this.proactiveReads.delete(id);
    const read = (async (): Promise<ProactiveRead> => {
      const user = await this.budgetUser(userId);
      // One read for every scope the answer needs: the user's own, and all guests' for a guest.
      const rows = await this.sql<{ scope: string; used: string | number }>`
        SELECT scope, tokens_in + tokens_out AS used FROM model_usage WHERE day = ${day} AND scope IN (${userId}, ${user.guest ? GUESTS : userId})`;
      return { user, used: new Map(rows.map((row) => [row.scope, Number(row.used)])) };
    })();
    const entry = { at, day, read };
    this.proactiveReads.set(userId, entry);
    read.catch(() => {
      if (this.proactiveReads.get(userId) === entry) this.proactiveReads.delete(userId);
    });
    return read;
  }

  /**
   * 429 BUDGET_EXCEEDED (with Retry-After until midnight UTC) when the user, or all guests, spent
   * today's tokens: the check before a chat message. Calls in flight are not counted here (their
   * holds are the gateway's business, `reserve`).
   */
  async check(userId: string): Promise<void> {
    const now = this.clock();
    const day = dayOf(now);
    for (const { scope, limit } of this.scopes(userId, await this.budgetUser(userId))) {
      if ((await this.used(scope, day)) >= limit) throw spent(scope, now);
    }
  }

  /**
   * Admits one model call that may cost `tokens`, holding them against each ceiling that applies
   * until `settle`: 429 BUDGET_EXCEEDED when a budget is spent (Retry-After until midnight UTC),
   * or when calls in flight hold the rest of it (Retry-After a few seconds: they settle soon).
   */
  async reserve(userId: string, tokens: number, source: ModelSource = 'chat'): Promise<Reservation> {
    const now = this.clock();
    const day = dayOf(now);
    const user = await this.budgetUser(userId);
    const { guest } = user;
    const scopes = this.scopes(userId, user).map((entry) => ({ ...entry, key: `${entry.scope}|${day}` }));
    const proactive = PROACTIVE_SOURCES.includes(source);
    await this.oneAtATime(
      scopes.map(({ key }) => key),
      async () => {
        for (const { scope, limit, key } of scopes) {
          const used = await this.used(scope, day);
          if (used >= limit) throw spent(scope, now);
          const held = this.held.get(key) ?? 0;
          // A proactive call must fit whole: it never takes the budget past its ceiling.
          if (proactive && used + held + tokens > limit) throw spent(scope, now);
          if (used + held >= limit) throw heldInFlight(scope);
        }
        for (const { key } of scopes) this.held.set(key, (this.held.get(key) ?? 0) + tokens);
      },
    );
    let settled = false;
    return {
      guest,
      settle: async (usage) => {
        if (settled) return;
        settled = true;
        try {
          // Recorded before the hold goes, so that no admission in between sees neither.
          await this.record(userId, usage, guest, day, source);
        } finally {
          for (const { key } of scopes) {
            const left = (this.held.get(key) ?? 0) - tokens;
            if (left > 0) this.held.set(key, left);
            else this.held.delete(key);
          }
        }
      },
    };
  }

  /** The ceilings that apply to a user's calls: their own, and all guests' for a guest. */
  /** A guest's own daily message allowance, when an operator set one. */
  async guestMessagesPerDay(userId: string): Promise<number | null> {
    return (await this.budgetUser(userId)).guestMessagesPerDay ?? null;
  }

  /** The user's own daily ceiling (0: none): the operator's override, else the default for their kind. */
  private ownLimit(user: BudgetUser): number {
    return user.dailyTokens ?? (user.guest ? this.limits.guest : this.limits.account);
  }

  private scopes(userId: string, user: BudgetUser): Array<{ scope: string; limit: number }> {
    const { guest } = user;
    const own = this.ownLimit(user);
    return [...(own ? [{ scope: userId, limit: own }] : []), ...(guest && this.limits.guestsTotal ? [{ scope: GUESTS, limit: this.limits.guestsTotal }] : [])];
  }

  /** Runs `fn` after every earlier admission that shares one of `keys` (and before later ones). */
  private oneAtATime(keys: string[], fn: () => Promise<void>): Promise<void> {
    const earlier = Promise.all(keys.map((key) => this.admissions.get(key)));
    const turn = earlier.then(fn);
    const done = turn.catch(() => undefined);
    for (const key of keys) this.admissions.set(key, done);
    void done.then(() => {
      for (const key of keys) if (this.admissions.get(key) === done) this.admissions.delete(key);
    });
    return turn;
  }

  /** `guest`: known by the caller, else looked up; `day`: the day the call was admitted on (default today). */
  async record(userId: string, usage: TokenUsage, guest?: boolean, day = dayOf(this.clock()), source: ModelSource = 'chat'): Promise<void> {
    if (usage.tokensIn === 0 && usage.tokensOut === 0) return;
    // The user's own ceiling (an operator's override included) decides when `budget.exceeded` is due.
    const user = await this.budgetUser(userId);
    guest ??= user.guest;
    const spentNow = usage.tokensIn + usage.tokensOut;
    const of = (which: ModelSource) => (source === which ? spentNow : 0);
    const now = this.clock();
    // The call whose usage takes a scope from under its ceiling to it also writes the
    // `budget.exceeded` webhook event, in the same statement (events/outbox.ts); of
    // concurrent calls exactly one sees the crossing, as each adds to the row atomically.
    const add = (scope: string, limit: number) =>
      this.sql`
        WITH added AS (
          INSERT INTO model_usage (scope, day, tokens_in, tokens_out, tokens_chat, tokens_heartbeat, tokens_task, tokens_subagent)
          VALUES (${scope}, ${day}, ${usage.tokensIn}, ${usage.tokensOut}, ${of('chat')}, ${of('heartbeat')}, ${of('task')}, ${of('subagent')})
          ON CONFLICT (scope, day) DO UPDATE SET tokens_in = model_usage.tokens_in + EXCLUDED.tokens_in, tokens_out = model_usage.tokens_out + EXCLUDED.tokens_out,
            tokens_chat = model_usage.tokens_chat + EXCLUDED.tokens_chat, tokens_heartbeat = model_usage.tokens_heartbeat + EXCLUDED.tokens_heartbeat,
            tokens_task = model_usage.tokens_task + EXCLUDED.tokens_task, tokens_subagent = model_usage.tokens_subagent + EXCLUDED.tokens_subagent
          RETURNING tokens_in + tokens_out AS used
        ), hooked AS (
          SELECT id FROM webhook_endpoints
           WHERE enabled AND (cardinality(coalesce(event_types, '{}')) = 0 OR 'budget.exceeded' = ANY(event_types))
        ), crossed AS (
          INSERT INTO webhook_events (id, type, data, created_at)
          SELECT gen_random_uuid(), 'budget.exceeded',
                 jsonb_build_object('user_id', ${userId}::text, 'scope', ${scope === GUESTS ? 'guests' : 'user'}::text, 'day', ${day}::text, 'limit', ${limit}::bigint, 'used', used),
                 ${now}
            FROM added WHERE ${limit}::bigint > 0 AND used >= ${limit}::bigint AND used - ${spentNow}::bigint < ${limit}::bigint AND EXISTS (SELECT 1 FROM hooked)
          RETURNING id
        )
        INSERT INTO webhook_deliveries (id, event_id, endpoint_id, state, attempts, next_attempt_at, created_at)
        SELECT gen_random_uuid(), c.id, h.id, 'pending', 0, ${now}, ${now} FROM crossed AS c CROSS JOIN hooked AS h`;
    await Promise.all([add(userId, this.ownLimit({ ...user, guest })), ...(guest ? [add(GUESTS, this.limits.guestsTotal)] : [])]);
    this.proactiveReads.delete(userId);
    this.onRecord?.(usage, guest);
  }

  /** Counts one chat message or upload of the user today (the admin's usage per day); no budget applies to it. */
  async countActivity(userId: string, kind: 'message' | 'upload'): Promise<void> {
    const [messages, uploads] = kind === 'message' ? [1, 0] : [0, 1];
    await this.sql`INSERT INTO model_usage (scope, day, tokens_in, tokens_out, messages, uploads)
      VALUES (${userId}, ${dayOf(this.clock())}, 0, 0, ${messages}, ${uploads})
      ON CONFLICT (scope, day) DO UPDATE SET messages = model_usage.messages + EXCLUDED.messages, uploads = model_usage.uploads + EXCLUDED.uploads`;
  }
}

function spent(scope: string, now: Date): AppError {
  const resets = nextMidnight(now);
  const seconds = Math.max(1, Math.ceil((resets.getTime() - now.getTime()) / 1000));
  const whose =
    scope === GUESTS
      ? "Today's model budget for guests is used up (sign in with a method to keep chatting)"
      : "Today's model budget of this account is used up";
  return new AppError(429, 'BUDGET_EXCEEDED', `${whose}; it resets at ${resets.toISOString()}`, { 'Retry-After': String(seconds) });
}

/** Seconds a call refused for the holds of calls in flight is told to wait: about one model call. */
const IN_FLIGHT_RETRY_SECONDS = 5;

function heldInFlight(scope: string): AppError {
  const whose = scope === GUESTS ? 'for guests' : 'of this account';
  return new AppError(429, 'BUDGET_EXCEEDED', `What is left of today's model budget ${whose} is held by calls in flight; try again when they end`, {
    'Retry-After': String(IN_FLIGHT_RETRY_SECONDS),
  });
}

const CEILING_FIELDS = ['max_tokens', 'max_completion_tokens', 'max_output_tokens'];

/** A model call as the gateway forwards it: its body (with an output ceiling set) and what it may cost. */
export interface ModelCall {
  body: Buffer;
  /** Held against the budgets while the call runs: its output ceiling plus its prompt's bytes. */
  reserve: number;
  /** Charged when the answer reports no usage the gateway can read: ceiling plus prompt ÷ 4. */
  estimate: TokenUsage;
}

/**
 * Reads (or sets) a call's output ceiling. A generation request without one gets
 * `defaultMaxTokens` written into its body, so that no call may produce more than it reserved;
 * one the gateway cannot read (not a JSON object) is refused: undefined. The body is sent as
 * parsed, so the upstream reads the same fields (no duplicate key read one way here and another
 * there). The prompt is bounded by its size: a token stands for at least one byte of the request.
 */
export function modelCall(endpoint: GenerationEndpoint, body: Buffer, defaultMaxTokens: number): ModelCall | undefined {
  const request = parseObject(body);
  if (!request) return undefined;
  const given = CEILING_FIELDS.map((field) => request[field]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0);
  const maxTokens = given.length ? Math.max(...given) : defaultMaxTokens;
  const sent = Buffer.from(JSON.stringify(given.length ? request : { ...request, [endpoint.ceilingField]: defaultMaxTokens }));
  return { body: sent, reserve: maxTokens + sent.length, estimate: { tokensIn: Math.ceil(sent.length / 4), tokensOut: maxTokens } };
}

function parseObject(body: Buffer): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'));
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
