// Participants leave an export only as pseudonyms: a keyed hash (HMAC-SHA256) of their Discord user id. With the
// salt kept secret, nobody holding the export can recompute a pseudonym from a known Discord id, yet the same
// person keeps the same pseudonym across exports made with the same salt, so their sessions can be grouped.
import { createHmac } from 'node:crypto';

/** Length in hex characters (128 bits): collisions are out of reach for any realistic number of participants. */
const PSEUDONYM_HEX = 32;

export class PseudonymError extends Error {}

export function assertUsableSalt(salt: string): void {
  if (typeof salt !== 'string' || salt.length < 8) {
    throw new PseudonymError('the export salt must be a string of at least 8 characters (EXPORT_SALT)');
  }
}

/** Stable per salt, different across salts; "p_" marks it as a pseudonym, never a Discord id. */
export function pseudonymize(discordUserId: string, salt: string): string {
  assertUsableSalt(salt);
  const mac = createHmac('sha256', salt).update(discordUserId, 'utf8').digest('hex');
  return `p_${mac.slice(0, PSEUDONYM_HEX)}`;
}

/** Memoises per export: a participant's many sessions and ratings hash their id once. */
export function pseudonymizer(salt: string): (discordUserId: string) => string {
  assertUsableSalt(salt);
  const cache = new Map<string, string>();
  return (id) => {
    let p = cache.get(id);
    if (p === undefined) {
      p = pseudonymize(id, salt);
      if (cache.size < 100_000) cache.set(id, p);
    }
    return p;
  };
}
