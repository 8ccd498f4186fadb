import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { pseudonymize, pseudonymizer, PseudonymError } from '../../../bot/export/pseudonym.ts';

describe('pseudonyms', () => {
  const id = '111111111111111111';

  it('are the truncated HMAC-SHA256 of the Discord id keyed by the salt', () => {
    const expected = 'p_' + createHmac('sha256', 'salt-one-123').update(id).digest('hex').slice(0, 32);
    expect(pseudonymize(id, 'salt-one-123')).toBe(expected);
    expect(pseudonymize(id, 'salt-one-123')).toMatch(/^p_[0-9a-f]{32}$/);
  });

  it('are stable per salt and differ across salts and people', () => {
    expect(pseudonymize(id, 'salt-one-123')).toBe(pseudonymize(id, 'salt-one-123'));
    expect(pseudonymize(id, 'salt-one-123')).not.toBe(pseudonymize(id, 'salt-two-456'));
    expect(pseudonymize(id, 'salt-one-123')).not.toBe(pseudonymize('222222222222222222', 'salt-one-123'));
    expect(pseudonymize(id, 'salt-one-123')).not.toContain(id);
  });

  it('the memoising form agrees with the plain one', () => {
    const p = pseudonymizer('salt-one-123');
    expect(p(id)).toBe(pseudonymize(id, 'salt-one-123'));
    expect(p(id)).toBe(p(id));
  });

  it('refuses a short or empty salt', () => {
    expect(() => pseudonymize(id, '')).toThrow(PseudonymError);
    expect(() => pseudonymizer('short')).toThrow(/at least 8/);
  });
});
