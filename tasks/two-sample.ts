// Comparisons of two INDEPENDENT groups (the arms of an A/B test with real people: each person plays one session
// in one arm, nothing is paired). tasks/stats.ts holds the one-sample intervals and the paired tests; these build
// on its distributions: Newcombe's interval and Fisher's exact test for a difference of proportions (success,
// abandonment), Welch's t interval and test for a difference of means (score, rating, turns).
import { wilson, type Interval } from './stats.ts';
import { logChoose, tCdf, tQuantile } from './distributions.ts';

export interface Difference {
  /** a - b, with its interval (NaN bounds when there is not enough data). */
  difference: Interval;
  /** Two-sided p-value of "no difference" (NaN when it cannot be computed). */
  pValue: number;
  test: 'fisher-exact' | 'welch-t';
}

/**
 * Fisher's exact test of a 2x2 table (successes and failures of two groups), two-sided: the probability, given
 * the margins, of every table no more likely than the one observed.
 */
export function fisherExact(aSuccesses: number, aN: number, bSuccesses: number, bN: number): number {
  for (const [k, n] of [
    [aSuccesses, aN],
    [bSuccesses, bN],
  ] as const) {
    if (!Number.isInteger(k) || !Number.isInteger(n) || k < 0 || k > n)
      throw new RangeError(`fisherExact: need whole counts 0 <= k <= n, got ${k}/${n}`);
  }
  const successes = aSuccesses + bSuccesses;
  const total = aN + bN;
  if (aN === 0 || bN === 0) return 1;
  const logP = (x: number) => logChoose(aN, x) + logChoose(bN, successes - x) - logChoose(total, successes);
  const observed = logP(aSuccesses);
  let p = 0;
  for (let x = Math.max(0, successes - bN); x <= Math.min(aN, successes); x++) {
    const lp = logP(x);
    // Relative tolerance, as R's fisher.test does, so that tables as likely as the observed one are counted.
    if (lp <= observed + 1e-7) p += Math.exp(lp);
  }
  return Math.min(1, p);
}

/** Difference of two proportions: Newcombe's hybrid score interval (from the Wilson intervals) and Fisher's test. */
export function compareProportions(
  aSuccesses: number,
  aN: number,
  bSuccesses: number,
  bN: number,
  level = 0.95,
): Difference {
  const a = wilson(aSuccesses, aN, level);
  const b = wilson(bSuccesses, bN, level);
  const n = aN + bN;
  if (aN === 0 || bN === 0)
    return { difference: { estimate: NaN, lo: NaN, hi: NaN, n }, pValue: NaN, test: 'fisher-exact' };
  const d = a.estimate - b.estimate;
  const lo = d - Math.sqrt((a.estimate - a.lo) ** 2 + (b.hi - b.estimate) ** 2);
  const hi = d + Math.sqrt((a.hi - a.estimate) ** 2 + (b.estimate - b.lo) ** 2);
  return {
    difference: { estimate: d, lo, hi, n },
    pValue: fisherExact(aSuccesses, aN, bSuccesses, bN),
    test: 'fisher-exact',
  };
}

export interface Summary {
  n: number;
  mean: number;
  /** Sample variance (n - 1). */
  variance: number;
}

export function summarize(values: readonly number[]): Summary {
  const n = values.length;
  const mean = n ? values.reduce((s, x) => s + x, 0) / n : NaN;
  const variance = n > 1 ? values.reduce((s, x) => s + (x - mean) ** 2, 0) / (n - 1) : NaN;
  return { n, mean, variance };
}

/**
 * Welch's unequal-variance t interval and test for mean(a) - mean(b). Each group needs two values; when both
 * have no spread at all the difference is exact (p = 1 if equal, 0 otherwise).
 */
export function welch(a: Summary, b: Summary, level = 0.95): Difference {
  const n = a.n + b.n;
  if (a.n < 2 || b.n < 2)
    return {
      difference: { estimate: a.n && b.n ? a.mean - b.mean : NaN, lo: NaN, hi: NaN, n },
      pValue: NaN,
      test: 'welch-t',
    };
  const d = a.mean - b.mean;
  const va = a.variance / a.n;
  const vb = b.variance / b.n;
  const se = Math.sqrt(va + vb);
  if (se === 0) return { difference: { estimate: d, lo: d, hi: d, n }, pValue: d === 0 ? 1 : 0, test: 'welch-t' };
  const df = (va + vb) ** 2 / (va ** 2 / (a.n - 1) + vb ** 2 / (b.n - 1));
  const half = tQuantile(1 - (1 - level) / 2, df) * se;
  const t = d / se;
  return {
    difference: { estimate: d, lo: d - half, hi: d + half, n },
    pValue: Math.min(1, 2 * (1 - tCdf(Math.abs(t), df))),
    test: 'welch-t',
  };
}

export function compareMeans(a: readonly number[], b: readonly number[], level = 0.95): Difference {
  return welch(summarize(a), summarize(b), level);
}
