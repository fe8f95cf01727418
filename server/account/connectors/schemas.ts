/** Wire shapes of a user's connectors (`/api/v1/connectors`, `connectors.*` over tRPC). */
import { z } from 'zod';

/** The prefix of the connector's tool names for the model (`<name>__<tool>`, at most 64 characters in all). */
export const ConnectorName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,23}$/, 'letters, digits and hyphens, 1 to 24, starting with a letter or digit');

export const ConnectorStatus = z.enum(['connected', 'needs_auth', 'error']);
export type ConnectorStatus = z.infer<typeof ConnectorStatus>;

export const ConnectorToolView = z.object({ name: z.string(), description: z.string(), enabled: z.boolean() });

export const ConnectorView = z.object({
  id: z.uuid(),
  name: z.string(),
  url: z.string(),
  status: ConnectorStatus,
  tools: z.array(ConnectorToolView),
  /** Why the status is `error` (or the last sign-in failed). */
  error: z.string().optional(),
});
export type ConnectorView = z.infer<typeof ConnectorView>;

export const ConnectorList = z.object({ connectors: z.array(ConnectorView) });

export const NewConnector = z.object({ name: ConnectorName, url: z.string().min(1).max(2048) });

export const CreatedConnector = z.object({
  id: z.uuid(),
  name: z.string(),
  url: z.string(),
  status: ConnectorStatus,
  /** With `needs_auth`: where to send the user's browser to sign in (one use, 10 minutes). */
  authorize_url: z.string().optional(),
});
export type CreatedConnector = z.infer<typeof CreatedConnector>;

export const ConnectorId = z.object({ id: z.uuid() });

export const ConnectorUpdate = z.object({
  id: z.uuid(),
  name: ConnectorName.optional(),
  /** Tool name → enabled; tools not named keep their switch. */
  tools: z.record(z.string().max(200), z.boolean()).optional(),
});
export type ConnectorUpdate = z.infer<typeof ConnectorUpdate>;

export const AuthorizeLink = z.object({ authorize_url: z.string() });
