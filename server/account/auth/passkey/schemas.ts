/** Wire shapes of passkey (WebAuthn) sign-in and registration (docs/api.md, "Passkeys"). */
import { z } from 'zod';

const B64url = z
  .string()
  .min(1)
  .max(16_384)
  .regex(/^[A-Za-z0-9_-]+$/, 'must be base64url');

/** A passkey's name as its owner gives it; trimmed, 1..64 characters. */
export const PasskeyName = z.string().trim().min(1).max(64);

/** What `navigator.credentials.create()` returns, as @simplewebauthn/browser serialises it. */
const RegistrationResponse = z.looseObject({
  id: B64url,
  rawId: B64url,
  type: z.literal('public-key'),
  response: z.looseObject({ clientDataJSON: B64url, attestationObject: B64url, transports: z.array(z.string().max(32)).max(10).optional() }),
  clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
  authenticatorAttachment: z.string().max(32).optional(),
});

/** What `navigator.credentials.get()` returns, serialised the same way. */
const AuthenticationResponse = z.looseObject({
  id: B64url,
  rawId: B64url,
  type: z.literal('public-key'),
  response: z.looseObject({ clientDataJSON: B64url, authenticatorData: B64url, signature: B64url, userHandle: B64url.optional() }),
  clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
  authenticatorAttachment: z.string().max(32).optional(),
});

export const RegisterOptionsInput = z.object({}).optional();
export const RegisterVerifyInput = z.object({ response: RegistrationResponse, name: PasskeyName.optional() });
export const LoginOptionsInput = z.object({}).optional();
export const LoginVerifyInput = z.object({ response: AuthenticationResponse });

/** The options to hand to `navigator.credentials.create()` / `.get()` (WebAuthn's JSON forms). */
export const CreationOptions = z.record(z.string(), z.unknown()).meta({ id: 'PasskeyCreationOptions', description: 'PublicKeyCredentialCreationOptionsJSON' });
export const RequestOptions = z.record(z.string(), z.unknown()).meta({ id: 'PasskeyRequestOptions', description: 'PublicKeyCredentialRequestOptionsJSON' });

export const RenamePasskeyInput = z.object({ id: z.string().min(1).max(64), name: PasskeyName });
