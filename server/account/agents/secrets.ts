/**
 * Agent secrets are stored encrypted (AES-256-GCM). The key comes from AGENT_SECRETS_KEY
 * (32 bytes, base64) or is generated once into the data directory. Losing the key means
 * re-registering the agents; rotating it means re-encrypting the registry.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

const VERSION = 'v1';

export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('agent secrets key must be 32 bytes');
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  open(sealed: string): string {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== VERSION || !iv || !tag || body === undefined) throw new Error('not a sealed agent secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }
}

export async function loadSecretBox(configuredKey: string | undefined, dataDir: string): Promise<SecretBox> {
  if (configuredKey) return new SecretBox(Buffer.from(configuredKey, 'base64'));
  const file = path.join(dataDir, 'agent-secrets.key');
  const existing = await readFile(file, 'utf8').catch(() => undefined);
  if (existing) return new SecretBox(Buffer.from(existing.trim(), 'base64'));
  const key = randomBytes(32);
  await mkdir(dataDir, { recursive: true });
  // `wx`: two instances starting together must not each write a different key.
  await writeFile(file, key.toString('base64'), { mode: 0o600, flag: 'wx' }).catch(async (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
  return new SecretBox(Buffer.from((await readFile(file, 'utf8')).trim(), 'base64'));
}
