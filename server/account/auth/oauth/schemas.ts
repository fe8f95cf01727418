import { z } from 'zod';

export const Provider = z.enum(['idpa', 'idpb']);

export const Redirect = z.object({ location: z.string() });

/**
 * A repeated (array) or oversized parameter counts as absent: the flow then fails with an error
 * redirect, as the callback never answers with a JSON error.
 */
const param = z.preprocess((v) => (typeof v === 'string' && v.length <= 4096 ? v : undefined), z.string().optional());

/**
 * What a provider sends to the redirect URI. Unknown parameters (`iss`, `session_state`, …)
 * are kept, because openid-client checks some of them (RFC 9207 `iss`).
 */
export const CallbackQuery = z.looseObject({
  code: param,
  state: param,
  error: param,
  error_description: param,
  iss: param,
});

export const ExchangeInput = z.object({ code: z.string().min(1).max(256) });

export const AuthorizationUrlInput = z.object({ provider: Provider });
