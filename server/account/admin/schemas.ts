/** Wire shapes of the admin API (docs/admin.md), shared by tRPC, the REST bridge and OpenAPI. */
import { z } from 'zod';
import { SCOPES } from './keys.js';
import { AccountTier, TokensBySource } from '../me/schemas.js';

const Timestamp = z.string().meta({ description: 'UTC, ISO 8601 without a zone suffix' });
const Uuid = z.string().uuid();

export const Scope = z.enum(SCOPES);

/** Page size and cursor, shared by every list. */
const Page = {
  cursor: z.string().max(200).optional().meta({ description: "The previous page's `next_cursor`" }),
  limit: z.coerce.number().int().min(1).max(200).default(50),
};

// ---- API keys ----

export const ApiKey = z
  .object({
    id: z.string(),
    name: z.string(),
    scopes: z.array(z.string()),
    created_at: Timestamp,
    expires_at: Timestamp.nullable(),
    last_used_at: Timestamp.nullable(),
    revoked_at: Timestamp.nullable(),
  })
  .meta({ id: 'ApiKey' });

export const ApiKeys = z.object({ keys: z.array(ApiKey) });

export const CreateApiKeyInput = z.object({
  name: z.string().trim().min(1).max(100),
  scopes: z.array(Scope).min(1),
  expires_at: z.iso.datetime({ offset: true }).optional().meta({ description: 'When the key stops working; none: never' }),
});

export const CreatedApiKey = ApiKey.extend({ key: z.string().meta({ description: 'The key itself (`ak_…`): shown this once, stored only as a hash' }) }).meta({
  id: 'CreatedApiKey',
});

export const KeyIdInput = z.object({ id: z.string().regex(/^[0-9a-f]{24}$/) });

// ---- users ----

export const UserIdInput = z.object({ id: Uuid });

export const RoleInput = z.object({ id: Uuid, admin: z.boolean().meta({ description: 'true: grant the admin role; false: revoke it' }) });

export const UserFilter = z.enum(['guest', 'full', 'banned', 'admin']);

export const UsersQuery = z.object({
  query: z
    .string()
    .trim()
    .max(200)
    .optional()
    .meta({ description: 'An e-mail address (or its start), a wallet address, a Telegram bot username or a user id' }),
  filter: UserFilter.optional(),
  sort: z.enum(['created', 'last_active']).default('created'),
  ...Page,
});

export const Ban = z
  .object({ reason: z.string(), banned_at: Timestamp, expires_at: Timestamp.nullable() })
  .nullable()
  .meta({ id: 'Ban', description: 'The active ban, or null' });

export const UserSummary = z
  .object({
    id: z.string(),
    email: z.string().nullable(),
    guest: z.boolean().meta({ description: 'Guest terms apply: true for every tier but `full`' }),
    tier: AccountTier,
    admin: z.boolean(),
    created_at: Timestamp,
    last_active_at: Timestamp,
    ban: Ban,
  })
  .meta({ id: 'AdminUserSummary' });

export const UsersPage = z.object({ users: z.array(UserSummary), next_cursor: z.string().nullable() });

export const Metadata = z
  .record(z.string(), z.unknown())
  .refine((value) => JSON.stringify(value).length <= 4096, 'metadata is at most 4 KiB of JSON')
  .meta({ description: 'A JSON object the operator owns (at most 4 KiB)' });

export const UserOverrides = z.object({
  model_daily_tokens: z
    .number()
    .int()
    .min(0)
    .nullable()
    .meta({ description: "This user's daily model tokens (0: no ceiling); null: MODEL_DAILY_TOKENS(_GUEST)" }),
  guest_messages_per_day: z.number().int().min(0).nullable().meta({ description: "A guest's daily chat messages; null: the service's default" }),
});

/** A user's usage over some days: model tokens (also by source), chat messages the proxy admitted, files the agent took. */
const UsageFigures = z.object({
  tokens_in: z.number().int(),
  tokens_out: z.number().int(),
  messages: z.number().int(),
  uploads: z.number().int(),
  by_source: TokensBySource,
});

export const UserDetail = UserSummary.extend({
  metadata: z.record(z.string(), z.unknown()),
  overrides: UserOverrides,
  identities: z.array(
    z.object({
      id: z.string(),
      provider: z.string(),
      subject: z.string(),
      email: z.string().nullable(),
      created_at: Timestamp,
      last_used_at: Timestamp.nullable(),
    }),
  ),
  sessions: z.array(z.object({ id: z.string(), created_at: Timestamp, last_used_at: Timestamp, ip: z.string().nullable(), user_agent: z.string().nullable() })),
  activity: z.array(z.object({ type: z.string(), at: Timestamp, ip: z.string().nullable(), detail: z.record(z.string(), z.unknown()) })),
  usage: z.object({
    today: UsageFigures,
    last_30_days: UsageFigures,
    model_tokens_limit: z.number().int().nullable(),
  }),
  agent: z.object({ name: z.string(), kind: z.string(), running: z.boolean(), bot: z.string().nullable() }).nullable(),
}).meta({ id: 'AdminUserDetail' });

export const InviteInput = z.object({ email: z.string().trim().toLowerCase().pipe(z.email()).meta({ description: 'The address to invite' }) });

export const PatchUserInput = z.object({
  id: Uuid,
  metadata: Metadata.optional(),
  model_daily_tokens: UserOverrides.shape.model_daily_tokens.optional(),
  guest_messages_per_day: UserOverrides.shape.guest_messages_per_day.optional(),
});

export const BanInput = z.object({
  id: Uuid,
  reason: z.string().trim().min(1).max(500),
  expires_at: z.iso.datetime({ offset: true }).optional().meta({ description: 'When the ban ends on its own; none: until lifted' }),
});

// ---- agents ----

export const RunningAgent = z
  .object({
    user_id: z.string().nullable(),
    name: z.string(),
    since: Timestamp.nullable(),
    memory_bytes: z.number().nullable(),
    last_activity_at: Timestamp.nullable(),
    runs_in_flight: z.number().int().nullable(),
  })
  .meta({ id: 'AdminRunningAgent' });

export const RunningAgents = z.object({ agents: z.array(RunningAgent) });

export const AgentUserInput = z.object({ user_id: Uuid });

export const UsageQuery = z.object({
  user_id: Uuid.optional(),
  days: z.coerce.number().int().min(1).max(90).default(30),
});

export const UsageRows = z.object({
  usage: z.array(UsageFigures.extend({ user_id: z.string(), day: z.string() })),
});

// ---- audit ----

export const AuditQuery = z.object({
  action: z.string().max(64).optional(),
  actor_id: z.string().max(64).optional(),
  target_id: z.string().max(64).optional(),
  since: z.iso.datetime({ offset: true }).optional(),
  until: z.iso.datetime({ offset: true }).optional(),
  ...Page,
});

export const AuditEvent = z
  .object({
    id: z.string(),
    at: Timestamp,
    actor: z.object({ type: z.string(), id: z.string().nullable(), label: z.string().nullable() }),
    action: z.string(),
    target: z.object({ type: z.string(), id: z.string() }).nullable(),
    ip: z.string().nullable(),
    before: z.unknown().nullable(),
    after: z.unknown().nullable(),
  })
  .meta({ id: 'AuditEvent' });

export const AuditPage = z.object({ events: z.array(AuditEvent), next_cursor: z.string().nullable() });
