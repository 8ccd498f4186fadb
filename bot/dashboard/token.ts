// The dashboard's secrets, with no dependency beyond node:crypto so the logger (bin/log.ts) can recognise one
// without loading the database client: "sld_" and 32 random bytes in base64url, stored only as their sha256.
import { createHash, randomBytes } from 'node:crypto';

export const TOKEN_PREFIX = 'sld_';

/** A dashboard secret anywhere in a text (the logger replaces it). */
export const TOKEN_PATTERN = new RegExp(`${TOKEN_PREFIX}[A-Za-z0-9_-]{8,}`, 'g');

/** A new secret. Its first 12 characters name it in lists. */
export function newTokenSecret(): { secret: string; sha256: string; prefix: string } {
  const secret = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  return { secret, sha256: tokenHash(secret), prefix: secret.slice(0, 12) };
}

export const tokenHash = (secret: string) => createHash('sha256').update(secret, 'utf8').digest('hex');
