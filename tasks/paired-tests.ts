// Paired comparisons: two policies played the SAME games (task, seed, collaborator), so each game gives a pair
// of outcomes and the tests below use the pairing (far more power than comparing two independent rates):
// McNemar's exact test (success, also clustered by task) and the Wilcoxon signed-rank test (score). The paired
// bootstrap interval is stats.ts's.
import { binomialCdf, normalCdf } from './distributions.ts';
import { assertPaired, clusterSums, repeatsClusters } from './stats.ts';

export interface McNemarResult {
  /** Games A won and B lost (A succeeded, B failed). */
  aOnly: number;
  /** Games B won and A lost. */
  bOnly: number;
  /** Two-sided p-value. Exact: the discordant games split as Binomial(aOnly + bOnly, 1/2) under "no difference". */
  pValue: number;
  /** 'exact' for independent games; 'clustered' (mcnemarClustered) when games share clusters. */
  method: 'exact' | 'clustered';
}

/**
 * McNemar's exact test for paired successes. Only discordant games (one policy succeeded, the other failed)
 * carry information; under the null each goes either way with probability 1/2. p = min(1, 2 P(X <= min(b, c))).
 * With no discordant game p = 1 (nothing tells the policies apart).
 */
export function mcnemarExact(aOnly: number, bOnly: number): McNemarResult {
  if (!Number.isInteger(aOnly) || !Number.isInteger(bOnly) || aOnly < 0 || bOnly < 0)
    throw new RangeError(`mcnemarExact: need whole counts, got ${aOnly}, ${bOnly}`);
  const n = aOnly + bOnly;
  const pValue = n === 0 ? 1 : Math.min(1, 2 * binomialCdf(Math.min(aOnly, bOnly), n, 0.5));
  return { aOnly, bOnly, pValue, method: 'exact' };
}

/**
 * McNemar's test from paired success flags (a[i] and b[i] are the same game): exact, unless `clusters` puts
 * several games in one cluster (then mcnemarClustered).
 */
export function mcnemarPaired(
  a: readonly boolean[],
  b: readonly boolean[],
  clusters?: readonly string[],
): McNemarResult {
  assertPaired(a, b);
  if (clusters && repeatsClusters(clusters)) return mcnemarClustered(a, b, clusters);
  const { aOnly, bOnly } = discordant(a, b);
  return mcnemarExact(aOnly, bOnly);
}

/** Games A alone succeeded in and games B alone succeeded in. */
function discordant(a: readonly boolean[], b: readonly boolean[]): { aOnly: number; bOnly: number } {
  let aOnly = 0,
    bOnly = 0;
  a.forEach((x, i) => {
    if (x && !b[i]) aOnly++;
    else if (!x && b[i]) bOnly++;
  });
  return { aOnly, bOnly };
}

/**
 * McNemar's test when paired games come in clusters (the games of one task share it and are correlated):
 * Durkalski et al. (2003, Stat Med 22:1417), X² = (Σ_k (b_k − c_k))² / Σ_k (b_k − c_k)², where b_k and c_k are
 * cluster k's games won by A only and by B only; X² is χ²(1) under "no difference" (asymptotic, so
 * `method: 'clustered'`). With one game a cluster X² is McNemar's (b − c)²/(b + c); there the exact test
 * (mcnemarExact) is the one to use, and mcnemarPaired chooses it.
 */
export function mcnemarClustered(
  a: readonly boolean[],
  b: readonly boolean[],
  clusters: readonly string[],
): McNemarResult {
  assertPaired(a, b);
  const { sums } = clusterSums(
    a.map((x, i) => Number(x) - Number(b[i])),
    clusters,
  );
  const { aOnly, bOnly } = discordant(a, b);
  const den = sums.reduce((s, x) => s + x * x, 0);
  if (den === 0) return { aOnly, bOnly, pValue: 1, method: 'clustered' };
  const num = sums.reduce((s, x) => s + x, 0) ** 2;
  return { aOnly, bOnly, pValue: Math.min(1, 2 * normalCdf(-Math.sqrt(num / den))), method: 'clustered' };
}

export interface WilcoxonResult {
  /** Pairs with a non-zero difference (zero differences are dropped, Wilcoxon's original rule). */
  n: number;
  zeros: number;
  /** Sum of the ranks of the positive differences (a > b); tied |differences| share their average rank. */
  wPlus: number;
  wMinus: number;
  /** Two-sided p-value. */
  pValue: number;
  method: 'exact' | 'normal';
}

/** Below this many non-zero differences the p-value is exact; above, the normal approximation is used. */
export const WILCOXON_EXACT_MAX = 60;

/**
 * Wilcoxon signed-rank test of paired samples (H0: the differences a[i] - b[i] are symmetric about 0).
 * - Zero differences (|d| <= zeroTolerance) are dropped before ranking ("wilcox" rule; scipy's default).
 * - Ties among |d| get the average of the ranks they span (midranks).
 * - n <= WILCOXON_EXACT_MAX: exact p-value from the permutation distribution of W+ over the 2^n sign flips of
 *   the observed (mid)ranks, counted by dynamic programming on doubled ranks (midranks are multiples of 1/2),
 *   so it stays exact with ties. Otherwise: normal approximation with the tie-corrected variance
 *   n(n+1)(2n+1)/24 - sum(t^3 - t)/48, no continuity correction.
 * p = min(1, 2 min(P(W+ <= w), P(W+ >= w))).
 */
export function wilcoxonSignedRank(a: readonly number[], b: readonly number[], zeroTolerance = 1e-12): WilcoxonResult {
  assertPaired(a, b);
  const all = a.map((x, i) => x - b[i]!);
  if (all.some((x) => !Number.isFinite(x))) throw new RangeError('wilcoxonSignedRank: not a finite number');
  const d = all.filter((x) => Math.abs(x) > zeroTolerance);
  const zeros = all.length - d.length;
  const n = d.length;
  if (n === 0) return { n, zeros, wPlus: 0, wMinus: 0, pValue: 1, method: 'exact' };
  const order = d.map((x, i) => ({ abs: Math.abs(x), i })).sort((p, q) => p.abs - q.abs);
  const ranks = new Array<number>(n);
  const tieSizes: number[] = [];
  for (let s = 0; s < n; ) {
    let e = s;
    while (e + 1 < n && order[e + 1]!.abs - order[s]!.abs <= zeroTolerance) e++;
    const mid = (s + e) / 2 + 1;
    for (let k = s; k <= e; k++) ranks[order[k]!.i] = mid;
    tieSizes.push(e - s + 1);
    s = e + 1;
  }
  let wPlus = 0;
  d.forEach((x, i) => {
    if (x > 0) wPlus += ranks[i]!;
  });
  const total = (n * (n + 1)) / 2;
  const wMinus = total - wPlus;
  if (n <= WILCOXON_EXACT_MAX) {
    // counts[s] = number of sign assignments whose doubled W+ equals s.
    const doubled = ranks.map((r) => Math.round(2 * r));
    const max = doubled.reduce((s, r) => s + r, 0);
    let counts = new Float64Array(max + 1);
    counts[0] = 1;
    for (const r of doubled) {
      const next = new Float64Array(max + 1);
      for (let s = 0; s <= max; s++) {
        if (counts[s] === 0) continue;
        next[s] = next[s]! + counts[s]!;
        next[s + r] = next[s + r]! + counts[s]!;
      }
      counts = next;
    }
    const w2 = Math.round(2 * wPlus);
    let le = 0,
      ge = 0;
    const all2 = 2 ** n;
    for (let s = 0; s <= max; s++) {
      if (s <= w2) le += counts[s]!;
      if (s >= w2) ge += counts[s]!;
    }
    return { n, zeros, wPlus, wMinus, pValue: Math.min(1, (2 * Math.min(le, ge)) / all2), method: 'exact' };
  }
  const variance = (n * (n + 1) * (2 * n + 1)) / 24 - tieSizes.reduce((s, t) => s + t * t * t - t, 0) / 48;
  const z = (wPlus - total / 2) / Math.sqrt(variance);
  return { n, zeros, wPlus, wMinus, pValue: Math.min(1, 2 * normalCdf(-Math.abs(z))), method: 'normal' };
}
