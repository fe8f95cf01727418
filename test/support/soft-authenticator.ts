/**
 * A software WebAuthn authenticator for API tests: it answers the options our server hands out
 * with real responses (P-256 keys, `none` attestation, CBOR from @simplewebauthn's helpers), and
 * can be told to lie — another origin, another relying party id, a chosen signature counter —
 * so each check of the server can be shown to bite.
 */
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { isoCBOR } from '@simplewebauthn/server/helpers';

interface Credential {
  id: string;
  privateKey: KeyObject;
  counter: number;
  userHandle: string;
  rpId: string;
}

export interface Overrides {
  origin?: string;
  rpId?: string;
  counter?: number;
  challenge?: string;
  /** false: a sign-in without user verification (no PIN or biometric: the UV flag unset). */
  userVerified?: boolean;
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest();
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const clientData = (type: string, challenge: string, origin: string) => Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }));

export class SoftAuthenticator {
  readonly credentials: Credential[] = [];

  constructor(readonly origin: string) {}

  create(options: PublicKeyCredentialCreationOptionsJSON, overrides: Overrides = {}): RegistrationResponseJSON {
    const rpId = overrides.rpId ?? options.rp.id ?? new URL(this.origin).hostname;
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' });
    const cose = new Map<number, number | Uint8Array>([
      [1, 2],
      [3, -7],
      [-1, 1],
      [-2, Buffer.from(jwk.x!, 'base64url')],
      [-3, Buffer.from(jwk.y!, 'base64url')],
    ]);
    const id = randomBytes(16);
    const counter = overrides.counter ?? 0;
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(id.length);
    const authData = Buffer.concat([sha256(rpId), Buffer.from([0x45]), u32(counter), Buffer.alloc(16), idLength, id, Buffer.from(isoCBOR.encode(cose))]);
    const attestationObject = isoCBOR.encode(
      new Map<string, unknown>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]) as never,
    );
    this.credentials.push({ id: id.toString('base64url'), privateKey, counter, userHandle: options.user.id, rpId });
    return {
      id: id.toString('base64url'),
      rawId: id.toString('base64url'),
      type: 'public-key',
      response: {
        clientDataJSON: clientData('webauthn.create', overrides.challenge ?? options.challenge, overrides.origin ?? this.origin).toString('base64url'),
        attestationObject: Buffer.from(attestationObject).toString('base64url'),
        transports: ['internal'],
      },
      clientExtensionResults: {},
    };
  }

  get(options: PublicKeyCredentialRequestOptionsJSON, overrides: Overrides & { credential?: Credential } = {}): AuthenticationResponseJSON {
    const credential = overrides.credential ?? this.credentials[0];
    if (!credential) throw new Error('no credential');
    credential.counter = overrides.counter ?? credential.counter + 1;
    // Flags: user present (0x01), user verified (0x04).
    const flags = overrides.userVerified === false ? 0x01 : 0x05;
    const authData = Buffer.concat([sha256(overrides.rpId ?? credential.rpId), Buffer.from([flags]), u32(credential.counter)]);
    const data = clientData('webauthn.get', overrides.challenge ?? options.challenge, overrides.origin ?? this.origin);
    const signature = sign('sha256', Buffer.concat([authData, sha256(data)]), { key: credential.privateKey, dsaEncoding: 'der' });
    return {
      id: credential.id,
      rawId: credential.id,
      type: 'public-key',
      response: {
        clientDataJSON: data.toString('base64url'),
        authenticatorData: authData.toString('base64url'),
        signature: signature.toString('base64url'),
        userHandle: credential.userHandle,
      },
      clientExtensionResults: {},
    };
  }
}
