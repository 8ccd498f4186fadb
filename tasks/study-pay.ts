// What a study session is worth, in time and money, from facts alone (no database): its active time, from the
// moments something happened in it, and the amount a study's pay rules give it. bot/study-payouts.ts,
// bot/study-progress.ts and the erasure in prisma/privacy-store.ts all use these two rules.

/** A gap between two moments longer than this is time the person was away, and does not count as active. */
export const IDLE_GAP_MS = 5 * 60_000;

/**
 * Active time of a session: the sum of the gaps between consecutive moments (its start, each message, the
 * answer), leaving out every gap over `idleGapMs` entirely. Moments may come in any order; fewer than two give 0.
 */
export function activeMs(moments: readonly (Date | number)[], idleGapMs = IDLE_GAP_MS): number {
  const t = moments.map((m) => (typeof m === 'number' ? m : m.getTime())).sort((a, b) => a - b);
  let sum = 0;
  for (let i = 1; i < t.length; i++) {
    const gap = t[i]! - t[i - 1]!;
    if (gap <= idleGapMs) sum += gap;
  }
  return sum;
}

/** A study's pay rules, in the currency's minor units (cents); null: no such pay. */
export interface PayRules {
  payPerSessionCents: number | null;
  bonusSuccessCents: number | null;
}

/** Whether a study has pay rules at all. */
export function hasPay(r: PayRules): boolean {
  return r.payPerSessionCents !== null || r.bonusSuccessCents !== null;
}

/**
 * What one session earns: the pay per session when it was answered, plus the success bonus when that answer
 * succeeded. An abandoned, expired or running session earns nothing.
 */
export function sessionAmountCents(r: PayRules, s: { answered: boolean; success: boolean | null }): number {
  if (!s.answered) return 0;
  return (r.payPerSessionCents ?? 0) + (s.success ? (r.bonusSuccessCents ?? 0) : 0);
}
