// The two rules of study pay (tasks/study-pay.ts): a session's active time leaves out idle gaps, and its amount
// follows the study's pay rules.
import { describe, expect, it } from 'vitest';
import { activeMs, hasPay, IDLE_GAP_MS, sessionAmountCents } from '../../tasks/study-pay.ts';

const min = 60_000;

describe('activeMs', () => {
  it('sums the gaps between consecutive moments', () => {
    expect(activeMs([0, 1 * min, 3 * min, 4.5 * min])).toBe(4.5 * min);
  });

  it('leaves out a gap over the idle limit entirely, keeps one exactly at it', () => {
    // start, a message 2 min later, away for 20 min, two more a minute apart
    expect(activeMs([0, 2 * min, 22 * min, 23 * min])).toBe(3 * min);
    expect(activeMs([0, IDLE_GAP_MS])).toBe(IDLE_GAP_MS);
    expect(activeMs([0, IDLE_GAP_MS + 1])).toBe(0);
    expect(IDLE_GAP_MS).toBe(5 * min);
  });

  it('takes moments in any order, as dates or milliseconds, and a custom limit', () => {
    const t0 = new Date('2027-01-10T10:00:00Z');
    const at = (m: number) => new Date(t0.getTime() + m * min);
    expect(activeMs([at(4), at(0), at(1)])).toBe(4 * min);
    expect(activeMs([at(0), at(1), at(4)], 2 * min)).toBe(1 * min);
  });

  it('is 0 with fewer than two moments or identical ones', () => {
    expect(activeMs([])).toBe(0);
    expect(activeMs([new Date()])).toBe(0);
    expect(activeMs([5, 5, 5])).toBe(0);
  });
});

describe('sessionAmountCents', () => {
  const rules = { payPerSessionCents: 250, bonusSuccessCents: 100 };

  it('pays an answered session, and the bonus when it succeeded', () => {
    expect(sessionAmountCents(rules, { answered: true, success: false })).toBe(250);
    expect(sessionAmountCents(rules, { answered: true, success: true })).toBe(350);
    expect(sessionAmountCents(rules, { answered: true, success: null })).toBe(250);
  });

  it('pays nothing for a session without an answer, success or not', () => {
    expect(sessionAmountCents(rules, { answered: false, success: true })).toBe(0);
  });

  it('reads a missing rule as nothing', () => {
    expect(
      sessionAmountCents({ payPerSessionCents: null, bonusSuccessCents: 100 }, { answered: true, success: true }),
    ).toBe(100);
    expect(
      sessionAmountCents({ payPerSessionCents: 200, bonusSuccessCents: null }, { answered: true, success: true }),
    ).toBe(200);
    expect(hasPay({ payPerSessionCents: null, bonusSuccessCents: null })).toBe(false);
    expect(hasPay({ payPerSessionCents: 0, bonusSuccessCents: null })).toBe(true);
  });
});
