/**
 * Model tokens: read from each model answer as it passes through the egress gateway, counted per
 * user and day (UTC) in the account store, and held against the daily budgets
 * (MODEL_DAILY_TOKENS for accounts, MODEL_DAILY_TOKENS_GUEST per guest,
 * MODEL_DAILY_TOKENS_GUESTS_TOTAL for all guests together; 0 or unset: no ceiling).
 *
 * The gateway sees every model call of a local agent, so no agent can spend past its owner's
 * budget by skipping a report. A call that starts while budget is left may finish past it: the
 * ceiling is checked before each call, and usage is known only once the answer is complete.
 */
import { AppError } from '../../common/errors.js';
import type { HotSql } from '../hot-sql.js';

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

export interface BudgetStatus {
  used: number;
  /** Null: no ceiling. */
  limit: number | null;
  resets_at: string;
}

const GUESTS = 'guests';
const dayOf = (now: Date) => now.toISOString().slice(0, 10);
const nextMidnight = (now: Date) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));

export class ModelBudget {
  constructor(
    private readonly sql: HotSql,
    private readonly limits: BudgetLimits,
    private readonly isGuest: (userId: string) => Promise<boolean>,
    private readonly onRecord?: (usage: TokenUsage, guest: boolean) => void,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  private async used(scope: string, day: string): Promise<number> {
    const rows = await this.sql<{ used: string | number }>`SELECT tokens_in + tokens_out AS used FROM model_usage WHERE scope = ${scope} AND day = ${day}`;
    return Number(rows[0]?.used ?? 0);
  }

  /** Today's usage and ceiling of one user. */
  async status(userId: string): Promise<BudgetStatus> {
    const now = this.clock();
    const limit = (await this.isGuest(userId)) ? this.limits.guest : this.limits.account;
    return { used: await this.used(userId, dayOf(now)), limit: limit || null, resets_at: nextMidnight(now).toISOString() };
  }

  /**
   * 429 BUDGET_EXCEEDED (with Retry-After until midnight UTC) when the user, or all guests, spent
   * today's tokens. Answers whether the user is a guest, so the call's `record` need not ask again.
   */
  async check(userId: string): Promise<{ guest: boolean }> {
    const now = this.clock();
    const day = dayOf(now);
    const guest = await this.isGuest(userId);
    const own = guest ? this.limits.guest : this.limits.account;
    const [mine, guests] = await Promise.all([own ? this.used(userId, day) : 0, guest && this.limits.guestsTotal ? this.used(GUESTS, day) : 0]);
    const spent = (own && mine >= own) || (guest && this.limits.guestsTotal && guests >= this.limits.guestsTotal);
    if (!spent) return { guest };
    const resets = nextMidnight(now);
    const seconds = Math.max(1, Math.ceil((resets.getTime() - now.getTime()) / 1000));
    const whose =
      own && mine >= own
        ? "Today's model budget of this account is used up"
        : "Today's model budget for guests is used up (sign in with a method to keep chatting)";
    throw new AppError(429, 'BUDGET_EXCEEDED', `${whose}; it resets at ${resets.toISOString()}`, { 'Retry-After': String(seconds) });
  }

  /** `guest`: what `check` answered for this call, else looked up. */
  async record(userId: string, usage: TokenUsage, guest?: boolean): Promise<void> {
    if (usage.tokensIn === 0 && usage.tokensOut === 0) return;
    const day = dayOf(this.clock());
    guest ??= await this.isGuest(userId);
    const add = (scope: string) =>
      this.sql`INSERT INTO model_usage (scope, day, tokens_in, tokens_out) VALUES (${scope}, ${day}, ${usage.tokensIn}, ${usage.tokensOut})
        ON CONFLICT (scope, day) DO UPDATE SET tokens_in = model_usage.tokens_in + EXCLUDED.tokens_in, tokens_out = model_usage.tokens_out + EXCLUDED.tokens_out`;
    await Promise.all([add(userId), ...(guest ? [add(GUESTS)] : [])]);
    this.onRecord?.(usage, guest);
  }
}
