/** Wire shapes of account self-service (docs/api.md, "Account self-service"). */
import { z } from 'zod';
import { ACTIVITY_TYPES } from '../events/activity.js';

/** UTC, ISO 8601 without a zone suffix. */
const Timestamp = z.string().meta({ description: 'UTC, ISO 8601 without a zone suffix' });

export const IdentityMethod = z.enum(['email', 'idpa', 'idpb', 'wallet', 'passkey']);

export const Identity = z
  .object({ id: z.string(), method: IdentityMethod, label: z.string(), created_at: Timestamp, last_used_at: Timestamp.nullable() })
  .meta({ id: 'Identity' });

/** Today's model tokens by what the agent's calls were for (contracts/agent/model-source.ts). */
export const TokensBySource = z
  .object({ chat: z.number().int(), heartbeat: z.number().int(), task: z.number().int(), subagent: z.number().int() })
  .meta({ id: 'TokensBySource', description: 'Model tokens (in and out) by source: chat, heartbeat, scheduled task, subagent' });

/** What the account may still use today: a guest's chat messages, and model tokens (agents/egress/model-usage.ts). */
export const AccountUsage = z
  .object({
    messages_left_today: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'Chat messages a guest may still send today; null for full accounts (no daily count)' }),
    messages_per_day: z.number().int().nullable().meta({ description: "A guest's daily allowance of chat messages; null for full accounts" }),
    model_tokens: z.object({ used: z.number().int(), limit: z.number().int().nullable(), resets_at: z.string(), by_source: TokensBySource }),
  })
  .meta({ id: 'AccountUsage' });

/** What vouches for the account (docs/security.md, "Accounts nothing vouches for"). */
export const AccountTier = z.enum(['guest', 'unverified', 'full']).meta({
  description:
    '`guest`: a device id only; `unverified`: a wallet or passkey but no verified e-mail or provider account; `full`: one of those. Guest terms apply until `full`',
});

export const Account = z
  .object({
    user_id: z.string(),
    guest: z.boolean().meta({ description: 'Guest terms apply (quotas and budgets of guests): true for every tier but `full`' }),
    tier: AccountTier,
    created_at: Timestamp,
    timezone: z.string().nullable().meta({ description: "The user's IANA time zone, as their browser last reported it; null until then" }),
    identities: z.array(Identity),
    usage: AccountUsage,
  })
  .meta({ id: 'Account' });

export const Session = z
  .object({
    id: z.string(),
    created_at: Timestamp,
    last_used_at: Timestamp,
    user_agent: z.string().nullable(),
    ip: z.string().nullable(),
    current: z.boolean(),
  })
  .meta({ id: 'Session' });

export const Sessions = z.object({ sessions: z.array(Session) });

export const ActivityEvent = z
  .object({
    type: z.enum(ACTIVITY_TYPES),
    at: Timestamp,
    ip: z.string().nullable(),
    user_agent: z.string().nullable(),
    detail: z.record(z.string(), z.string()),
  })
  .meta({ id: 'ActivityEvent' });

export const Activity = z.object({ events: z.array(ActivityEvent) });

/** Path ids: anything else than a short string is refused before it reaches a query. */
export const IdInput = z.object({ id: z.string().min(1).max(64) });

export const TimezoneInput = z.object({ timezone: z.string().min(1).max(64).meta({ description: 'An IANA time zone name, e.g. Europe/Berlin' }) });
