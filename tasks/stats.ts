// Interval estimates shared by the bot's reports, the trainer's evaluation tables and the frontend win rate, as
// pure functions: Wilson score intervals for proportions (success rate, win rate), Student-t intervals for means
// (% tests passed, similarity, rating, turns). Both behave at the small counts a young deployment has, where the
// normal approximation does not (Wilson never leaves [0, 1]). Paired comparisons of two policies on the same games:
// McNemar's exact test (success), the Wilcoxon signed-rank test and a seeded paired bootstrap (score), the games
// a paired comparison needs (power), and where a paired difference's variance comes from (task or game).

import { createRng } from './random.ts';

export interface Interval {
  estimate: number;
  /** NaN when there is no interval: no data, or a mean of a single value (no spread to estimate). */
  lo: number;
  hi: number;
  n: number;
}

/** Standard normal quantile (Acklam's rational approximation, relative error < 1.2e-9). */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError('normalQuantile: p must be in (0, 1)');
  const a = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
  const b = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
  const c = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
  const low = 0.02425;
  if (p < low) {
    const q = Math.sqrt(-2 * Math.log(p));
    return (((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) / ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1);
  }
  if (p > 1 - low) return -normalQuantile(1 - p);
  const q = p - 0.5;
  const r = q * q;
  return ((((((a[0]! * r + a[1]!) * r + a[2]!) * r + a[3]!) * r + a[4]!) * r + a[5]!) * q) /
    (((((b[0]! * r + b[1]!) * r + b[2]!) * r + b[3]!) * r + b[4]!) * r + 1);
}

/** Wilson score interval for `successes` out of `n` (successes may be fractional, e.g. ties counted as half). */
export function wilson(successes: number, n: number, level = 0.95): Interval {
  if (!(n >= 0) || !Number.isFinite(successes) || successes < 0 || successes > n) throw new RangeError('wilson: need 0 <= successes <= n');
  if (n === 0) return { estimate: NaN, lo: NaN, hi: NaN, n };
  const z = normalQuantile(1 - (1 - level) / 2);
  const p = successes / n;
  const z2 = z * z;
  const denom = 1 + z2 / n;
  const center = (p + z2 / (2 * n)) / denom;
  const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / denom;
  // At successes = 0 (= n) the bound is exactly 0 (1); the formula leaves rounding noise there.
  return { estimate: p, lo: successes === 0 ? 0 : Math.max(0, center - half), hi: successes === n ? 1 : Math.min(1, center + half), n };
}

/** Wilson interval for whole counts (games won, tasks solved): a fractional count is a caller's bug, not data. */
export function wilsonCount(k: number, n: number, level = 0.95): Interval {
  if (!Number.isInteger(k) || !Number.isInteger(n)) throw new RangeError(`wilsonCount: need integer counts, got ${k}/${n}`);
  return wilson(k, n, level);
}

/** log Gamma (Lanczos, g = 7, 9 terms): ~15 significant digits for x > 0. */
export function logGamma(x: number): number {
  const g = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
    12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];
  if (x < 0.5) return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - logGamma(1 - x);
  const y = x - 1;
  let s = g[0]!;
  for (let i = 1; i < 9; i++) s += g[i]! / (y + i);
  const t = y + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (y + 0.5) * Math.log(t) - t + Math.log(s);
}

/** Regularised incomplete beta I_x(a, b), by Lentz's continued fraction. */
export function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  // The fraction converges fast only for x < (a + 1) / (a + b + 2); use the symmetry otherwise.
  if (x > (a + 1) / (a + b + 2)) return 1 - incompleteBeta(1 - x, b, a);
  const tiny = 1e-300;
  let f = 1, c = 1, d = 0;
  for (let i = 0; i <= 400; i++) {
    const m = i >> 1;
    let num: number;
    if (i === 0) num = 1;
    else if (i % 2 === 0) num = (m * (b - m) * x) / ((a + 2 * m - 1) * (a + 2 * m));
    else num = -((a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1));
    d = 1 + num * d;
    if (Math.abs(d) < tiny) d = tiny;
    d = 1 / d;
    c = 1 + num / c;
    if (Math.abs(c) < tiny) c = tiny;
    const cd = c * d;
    f *= cd;
    if (Math.abs(1 - cd) < 1e-15) break;
  }
  return (front * (f - 1)) / a;
}

/** Student-t cumulative distribution with `df` degrees of freedom. */
export function tCdf(t: number, df: number): number {
  const x = df / (df + t * t);
  const tail = 0.5 * incompleteBeta(x, df / 2, 0.5);
  return t >= 0 ? 1 - tail : tail;
}

/** Student-t quantile, by bisection on tCdf (monotone, so this cannot miss). */
export function tQuantile(p: number, df: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError('tQuantile: p must be in (0, 1)');
  if (!(df > 0)) throw new RangeError('tQuantile: df must be > 0');
  if (p < 0.5) return -tQuantile(1 - p, df);
  let lo = 0, hi = 1;
  while (tCdf(hi, df) < p) hi *= 2;
  for (let i = 0; i < 200 && hi - lo > 1e-12 * Math.max(1, hi); i++) {
    const mid = (lo + hi) / 2;
    if (tCdf(mid, df) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** Streaming mean and variance (Welford): the report never holds a group's values. */
export class MeanAccumulator {
  n = 0;
  mean = 0;
  private m2 = 0;
  add(x: number): void {
    if (!Number.isFinite(x)) throw new RangeError(`MeanAccumulator: not a finite number: ${x}`);
    this.n++;
    const delta = x - this.mean;
    this.mean += delta / this.n;
    this.m2 += delta * (x - this.mean);
  }
  /** Sample variance (n - 1 in the denominator). */
  get variance(): number {
    return this.n > 1 ? this.m2 / (this.n - 1) : NaN;
  }
  interval(level = 0.95, bounds?: [number, number]): Interval {
    return meanInterval(this.n, this.mean, Math.sqrt(this.variance), level, bounds);
  }
}

/**
 * Student-t interval for a mean from n, the mean and the sample standard deviation. `bounds` clips it to the
 * scale the values live on (a rating mean cannot leave [1, 5]): at small n the raw interval can.
 */
export function meanInterval(n: number, mean: number, sd: number, level = 0.95, bounds?: [number, number]): Interval {
  if (n === 0) return { estimate: NaN, lo: NaN, hi: NaN, n };
  if (n === 1) return { estimate: mean, lo: NaN, hi: NaN, n };
  const half = tQuantile(1 - (1 - level) / 2, n - 1) * (sd / Math.sqrt(n));
  let lo = mean - half;
  let hi = mean + half;
  if (bounds) {
    lo = Math.max(bounds[0], lo);
    hi = Math.min(bounds[1], hi);
  }
  return { estimate: mean, lo, hi, n };
}

export function meanIntervalOf(values: readonly number[], level = 0.95, bounds?: [number, number]): Interval {
  const acc = new MeanAccumulator();
  for (const v of values) acc.add(v);
  return acc.interval(level, bounds);
}

/** Median of an integer histogram (counts[i] = how many values equal i). */
export function histogramMedian(counts: readonly number[]): number {
  const n = counts.reduce((a, b) => a + b, 0);
  if (n === 0) return NaN;
  const at = (k: number) => {
    let seen = 0;
    for (let i = 0; i < counts.length; i++) {
      seen += counts[i]!;
      if (seen > k) return i;
    }
    return counts.length - 1;
  };
  return n % 2 === 1 ? at((n - 1) / 2) : (at(n / 2 - 1) + at(n / 2)) / 2;
}

/** "41.7 [22.8, 63.1]" in percent; "40.0 (n=1)" when there is no interval. */
export function formatPercent(i: Interval, digits = 1): string {
  const f = (x: number) => (x * 100).toFixed(digits);
  if (!Number.isFinite(i.lo)) return `${f(i.estimate)} (n=${i.n})`;
  return `${f(i.estimate)} [${f(i.lo)}, ${f(i.hi)}]`;
}

// ---------------------------------------------------------------------------------------------------------
// Paired comparisons: two policies played the SAME games (task, seed, collaborator), so each game gives a pair
// of outcomes and the tests below use the pairing (far more power than comparing two independent rates).

/** log of the binomial coefficient C(n, k). */
export function logChoose(n: number, k: number): number {
  return logGamma(n + 1) - logGamma(k + 1) - logGamma(n - k + 1);
}

/** P(X <= k) for X ~ Binomial(n, p), summed term by term in log space (exact up to rounding for any n). */
export function binomialCdf(k: number, n: number, p: number): number {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`binomialCdf: n must be a non-negative integer, got ${n}`);
  if (k < 0) return 0;
  if (k >= n) return 1;
  if (p <= 0) return 1;
  if (p >= 1) return 0;
  let sum = 0;
  for (let i = 0; i <= Math.floor(k); i++) sum += Math.exp(logChoose(n, i) + i * Math.log(p) + (n - i) * Math.log(1 - p));
  return Math.min(1, sum);
}

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
  if (!Number.isInteger(aOnly) || !Number.isInteger(bOnly) || aOnly < 0 || bOnly < 0) throw new RangeError(`mcnemarExact: need whole counts, got ${aOnly}, ${bOnly}`);
  const n = aOnly + bOnly;
  const pValue = n === 0 ? 1 : Math.min(1, 2 * binomialCdf(Math.min(aOnly, bOnly), n, 0.5));
  return { aOnly, bOnly, pValue, method: 'exact' };
}

/**
 * McNemar's test from paired success flags (a[i] and b[i] are the same game): exact, unless `clusters` puts
 * several games in one cluster (then mcnemarClustered).
 */
export function mcnemarPaired(a: readonly boolean[], b: readonly boolean[], clusters?: readonly string[]): McNemarResult {
  assertPaired(a, b);
  if (clusters && repeatsClusters(clusters)) return mcnemarClustered(a, b, clusters);
  const { aOnly, bOnly } = discordant(a, b);
  return mcnemarExact(aOnly, bOnly);
}

/** Games A alone succeeded in and games B alone succeeded in. */
function discordant(a: readonly boolean[], b: readonly boolean[]): { aOnly: number; bOnly: number } {
  let aOnly = 0, bOnly = 0;
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
export function mcnemarClustered(a: readonly boolean[], b: readonly boolean[], clusters: readonly string[]): McNemarResult {
  assertPaired(a, b);
  const { sums } = clusterSums(a.map((x, i) => Number(x) - Number(b[i])), clusters);
  const { aOnly, bOnly } = discordant(a, b);
  const den = sums.reduce((s, x) => s + x * x, 0);
  if (den === 0) return { aOnly, bOnly, pValue: 1, method: 'clustered' };
  const num = sums.reduce((s, x) => s + x, 0) ** 2;
  return { aOnly, bOnly, pValue: Math.min(1, 2 * normalCdf(-Math.sqrt(num / den))), method: 'clustered' };
}

function assertPaired(a: readonly unknown[], b: readonly unknown[]): void {
  if (a.length !== b.length) throw new RangeError(`paired samples of different lengths (${a.length} and ${b.length}): they must be the same games`);
}

/**
 * Percentile bootstrap interval of the mean of paired differences a[i] - b[i]: resamples whole games (pairs)
 * with replacement `resamples` times. Seeded (mulberry32), so the same inputs give the same interval.
 *
 * With `clusters` (clusters[i] names game i's cluster, e.g. its task) whole clusters are resampled instead (the
 * cluster bootstrap): games of one task share it and are correlated, and resampling them one by one would
 * narrow the interval as if they were independent. Each resample's mean is its summed differences over its
 * games. With one game a cluster this is exactly the game bootstrap (same seed, same interval).
 */
export function pairedBootstrap(
  a: readonly number[],
  b: readonly number[],
  o: { level?: number; resamples?: number; seed?: number; clusters?: readonly string[] } = {},
): Interval {
  assertPaired(a, b);
  const n = a.length;
  const d = a.map((x, i) => x - b[i]!);
  if (d.some((x) => !Number.isFinite(x))) throw new RangeError('pairedBootstrap: not a finite number');
  if (n === 0) return { estimate: NaN, lo: NaN, hi: NaN, n };
  const mean = d.reduce((s, x) => s + x, 0) / n;
  const groups = o.clusters ? clusterSums(d, o.clusters) : { sums: d, sizes: d.map(() => 1) };
  const k = groups.sums.length;
  if (k === 1) return { estimate: mean, lo: NaN, hi: NaN, n };
  const level = o.level ?? 0.95;
  const resamples = o.resamples ?? 10_000;
  const rng = createRng(o.seed ?? 1);
  const means = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    let s = 0, m = 0;
    for (let i = 0; i < k; i++) {
      const j = Math.floor(rng() * k);
      s += groups.sums[j]!;
      m += groups.sizes[j]!;
    }
    means[r] = s / m;
  }
  means.sort();
  return { estimate: mean, lo: quantileSorted(means, (1 - level) / 2), hi: quantileSorted(means, 1 - (1 - level) / 2), n };
}

/** Sums and sizes of `values` by cluster (clusters[i] names value i's), in order of first appearance. */
function clusterSums(values: readonly number[], clusters: readonly string[]): { sums: number[]; sizes: number[] } {
  if (clusters.length !== values.length) throw new RangeError(`${values.length} values but ${clusters.length} cluster labels`);
  const index = new Map<string, number>();
  const sums: number[] = [];
  const sizes: number[] = [];
  values.forEach((v, i) => {
    let j = index.get(clusters[i]!);
    if (j === undefined) {
      j = sums.length;
      index.set(clusters[i]!, j);
      sums.push(0);
      sizes.push(0);
    }
    sums[j]! += v;
    sizes[j]! += 1;
  });
  return { sums, sizes };
}

/** Mean of `values` within each cluster (clusters[i] names value i's), in order of first appearance. */
export function clusterMeans(values: readonly number[], clusters: readonly string[]): number[] {
  const { sums, sizes } = clusterSums(values, clusters);
  return sums.map((s, j) => s / sizes[j]!);
}

/** True when some cluster holds more than one value. */
export function repeatsClusters(clusters: readonly string[]): boolean {
  return new Set(clusters).size < clusters.length;
}

/** Quantile of sorted values with linear interpolation between order statistics (numpy's default, "linear"). */
export function quantileSorted(sorted: ArrayLike<number>, q: number): number {
  const n = sorted.length;
  if (n === 0) return NaN;
  const h = (n - 1) * q;
  const lo = Math.floor(h);
  const hi = Math.min(n - 1, lo + 1);
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!);
}

/** Nearest-rank percentile (p in 0..100) of unsorted values: an observed value, as latency reports give. */
export function percentile(values: readonly number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** Standard normal cumulative distribution, Φ(z) = erfc(-z/√2)/2. */
export function normalCdf(z: number): number {
  return 0.5 * erfc(-z / Math.SQRT2);
}

/** Complementary error function (Numerical Recipes' erfcc Chebyshev fit, |relative error| < 1.2e-7). */
function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
    t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0 ? r : 2 - r;
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
    let le = 0, ge = 0;
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

export interface PairedSuccessPlan {
  /** Games needed (rounded up). */
  games: number;
  /** The discordance assumed: P(exactly one of the two policies succeeds on a game). */
  discordance: number;
  delta: number;
  alpha: number;
  power: number;
}

/**
 * Games needed for McNemar's test to detect a difference `delta` in success rate (two-sided `alpha`, the given
 * `power`), by Connor's (1987) formula n = (z_{1-α/2} √ψ + z_{power} √(ψ - δ²))² / δ², ψ the discordance.
 * Without a known ψ it is taken from independent games at success rates `baseline` and `baseline + delta`
 * (ψ = p1(1 - p2) + p2(1 - p1)); paired policies agree more often than that, so this errs towards more games.
 */
export function pairedSuccessGames(o: { delta: number; alpha?: number; power?: number; baseline?: number; discordance?: number }): PairedSuccessPlan {
  const alpha = o.alpha ?? 0.05;
  const power = o.power ?? 0.8;
  const delta = Math.abs(o.delta);
  if (!(delta > 0 && delta < 1)) throw new RangeError(`pairedSuccessGames: delta must be in (0, 1), got ${o.delta}`);
  if (!(alpha > 0 && alpha < 1) || !(power > 0 && power < 1)) throw new RangeError('pairedSuccessGames: alpha and power must be in (0, 1)');
  let psi = o.discordance;
  if (psi === undefined) {
    // Worst case over baselines when none is given: the rates straddle 1/2.
    const p1 = Math.min(Math.max(o.baseline ?? 0.5 - delta / 2, 0), 1 - delta);
    const p2 = p1 + delta;
    psi = p1 * (1 - p2) + p2 * (1 - p1);
  }
  if (!(psi >= delta * delta + 1e-12 && psi <= 1)) throw new RangeError(`pairedSuccessGames: discordance ${psi} cannot produce a difference of ${delta}`);
  const za = normalQuantile(1 - alpha / 2);
  const zb = normalQuantile(power);
  const n = (za * Math.sqrt(psi) + zb * Math.sqrt(psi - delta * delta)) ** 2 / (delta * delta);
  return { games: Math.ceil(n - 1e-9), discordance: psi, delta, alpha, power };
}

/** Power of McNemar's test with `games` games (normal approximation, the inverse of pairedSuccessGames). */
export function pairedSuccessPower(o: { games: number; delta: number; discordance: number; alpha?: number }): number {
  const alpha = o.alpha ?? 0.05;
  const delta = Math.abs(o.delta);
  const za = normalQuantile(1 - alpha / 2);
  return normalCdf((delta * Math.sqrt(o.games) - za * Math.sqrt(o.discordance)) / Math.sqrt(o.discordance - delta * delta));
}

/** The two parts of the variance of values grouped in clusters of equal size (tasks of k games each). */
export interface VarianceSplit {
  clusters: number;
  perCluster: number;
  /** Between values of one cluster: the mean square within. */
  within: number;
  /** Between cluster means beyond what `within` explains: max(0, (MSB - MSW) / k), the random-effects estimate. */
  between: number;
}

/** One-way random-effects ANOVA (equal cluster sizes, at least 2 clusters of at least 2 values). */
export function varianceComponents(values: readonly number[], clusters: readonly string[]): VarianceSplit {
  const { sums, sizes } = clusterSums(values, clusters);
  const k = sizes[0] ?? 0;
  const m = sums.length;
  if (m < 2 || k < 2 || sizes.some((size) => size !== k)) throw new RangeError('varianceComponents: needs at least 2 clusters of the same size, at least 2 values each');
  const grand = sums.reduce((a, b) => a + b, 0) / values.length;
  const msb = sums.reduce((a, sum) => a + k * (sum / k - grand) ** 2, 0) / (m - 1);
  // Within sum of squares as Σx² - Σ sum_j²/k; clipped at 0 against rounding when every cluster is constant.
  const msw = Math.max(0, values.reduce((a, x) => a + x * x, 0) - sums.reduce((a, sum) => a + (sum * sum) / k, 0)) / (m * (k - 1));
  return { clusters: m, perCluster: k, within: msw, between: Math.max(0, (msb - msw) / k) };
}

/**
 * Paired games needed to detect a mean difference `delta` (two-sided `alpha`, the given `power`; normal
 * approximation): n = ((z_{1-α/2} + z_power) sd / δ)². For games in tasks of k, sd² = within + k · between.
 */
export function pairedMeanGames(o: { delta: number; sd: number; alpha?: number; power?: number }): number {
  const alpha = o.alpha ?? 0.05;
  const power = o.power ?? 0.8;
  if (!(o.delta !== 0 && Number.isFinite(o.delta)) || !(o.sd >= 0)) throw new RangeError(`pairedMeanGames: needs a non-zero delta and sd >= 0, got ${o.delta}, ${o.sd}`);
  if (!(alpha > 0 && alpha < 1) || !(power > 0 && power < 1)) throw new RangeError('pairedMeanGames: alpha and power must be in (0, 1)');
  return Math.ceil((((normalQuantile(1 - alpha / 2) + normalQuantile(power)) * o.sd) / Math.abs(o.delta)) ** 2 - 1e-9);
}

/** Average ranks (1-based; ties share their mean rank). */
export function ranks(values: readonly number[]): number[] {
  const order = values.map((v, i) => ({ v, i })).sort((a, b) => a.v - b.v);
  const out = new Array<number>(values.length);
  for (let s = 0; s < order.length; ) {
    let e = s;
    while (e + 1 < order.length && order[e + 1]!.v === order[s]!.v) e++;
    for (let j = s; j <= e; j++) out[order[j]!.i] = (s + e) / 2 + 1;
    s = e + 1;
  }
  return out;
}

export interface Correlation {
  rho: number;
  n: number;
  /** Two-sided, from the t approximation (n - 2 degrees of freedom). */
  pValue: number;
}

/** Spearman's rank correlation (Pearson's of the average ranks, so ties are handled), with a two-sided p-value. */
export function spearman(x: readonly number[], y: readonly number[]): Correlation {
  if (x.length !== y.length) throw new RangeError(`spearman: ${x.length} against ${y.length} values`);
  const n = x.length;
  if (n < 3) return { rho: NaN, n, pValue: NaN };
  const rx = ranks(x);
  const ry = ranks(y);
  const mean = (n + 1) / 2;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += (rx[i]! - mean) * (ry[i]! - mean);
    sxx += (rx[i]! - mean) ** 2;
    syy += (ry[i]! - mean) ** 2;
  }
  if (sxx === 0 || syy === 0) return { rho: NaN, n, pValue: NaN };
  const rho = sxy / Math.sqrt(sxx * syy);
  if (Math.abs(rho) >= 1) return { rho, n, pValue: 0 };
  const t = rho * Math.sqrt((n - 2) / (1 - rho * rho));
  return { rho, n, pValue: 2 * (1 - tCdf(Math.abs(t), n - 2)) };
}
