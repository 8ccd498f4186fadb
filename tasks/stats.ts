// Interval estimates shared by the bot's reports, the trainer's evaluation tables and the frontend win rate, as
// pure functions: Wilson score intervals for proportions (success rate, win rate), Student-t intervals for means
// (% tests passed, similarity, rating, turns). Both behave at the small counts a young deployment has, where the
// normal approximation does not (Wilson never leaves [0, 1]). Also the seeded paired bootstrap of a score
// difference (whole games or whole tasks resampled), quantiles, and Spearman's rank correlation.
// The distributions they rest on are distributions.ts; the paired tests (McNemar, Wilcoxon) paired-tests.ts; the
// games a comparison needs and where a paired difference's variance comes from sample-size.ts.
import { createRng } from './random.ts';
import { normalQuantile, tCdf, tQuantile } from './distributions.ts';

export interface Interval {
  estimate: number;
  /** NaN when there is no interval: no data, or a mean of a single value (no spread to estimate). */
  lo: number;
  hi: number;
  n: number;
}

/** Wilson score interval for `successes` out of `n` (successes may be fractional, e.g. ties counted as half). */
export function wilson(successes: number, n: number, level = 0.95): Interval {
  if (!(n >= 0) || !Number.isFinite(successes) || successes < 0 || successes > n)
    throw new RangeError('wilson: need 0 <= successes <= n');
  if (n === 0) return { estimate: NaN, lo: NaN, hi: NaN, n };
  const z = normalQuantile(1 - (1 - level) / 2);
  const p = successes / n;
  const z2 = z * z;
  const denom = 1 + z2 / n;
  const center = (p + z2 / (2 * n)) / denom;
  const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / denom;
  // At successes = 0 (= n) the bound is exactly 0 (1); the formula leaves rounding noise there.
  return {
    estimate: p,
    lo: successes === 0 ? 0 : Math.max(0, center - half),
    hi: successes === n ? 1 : Math.min(1, center + half),
    n,
  };
}

/** Wilson interval for whole counts (games won, tasks solved): a fractional count is a caller's bug, not data. */
export function wilsonCount(k: number, n: number, level = 0.95): Interval {
  if (!Number.isInteger(k) || !Number.isInteger(n))
    throw new RangeError(`wilsonCount: need integer counts, got ${k}/${n}`);
  return wilson(k, n, level);
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

/** Paired samples are the same games: of the same length. */
export function assertPaired(a: readonly unknown[], b: readonly unknown[]): void {
  if (a.length !== b.length)
    throw new RangeError(
      `paired samples of different lengths (${a.length} and ${b.length}): they must be the same games`,
    );
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
    let s = 0,
      m = 0;
    for (let i = 0; i < k; i++) {
      const j = Math.floor(rng() * k);
      s += groups.sums[j]!;
      m += groups.sizes[j]!;
    }
    means[r] = s / m;
  }
  means.sort();
  return {
    estimate: mean,
    lo: quantileSorted(means, (1 - level) / 2),
    hi: quantileSorted(means, 1 - (1 - level) / 2),
    n,
  };
}

/** Sums and sizes of `values` by cluster (clusters[i] names value i's), in order of first appearance. */
export function clusterSums(
  values: readonly number[],
  clusters: readonly string[],
): { sums: number[]; sizes: number[] } {
  if (clusters.length !== values.length)
    throw new RangeError(`${values.length} values but ${clusters.length} cluster labels`);
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

/** A mean difference with its Student-t interval and two-sided p-value (H0: mean 0), e.g. one difference a seed. */
export interface MeanDifferenceTest {
  meanDiff: number;
  low: number;
  high: number;
  p: number;
  n: number;
}

/**
 * One-sample t-test of paired differences against 0 (each difference one independent unit, such as a seed of a
 * benchmark: its own starter, data and training). Needs n >= 2; with no spread the p-value is 0 or 1.
 */
export function oneSampleT(diffs: readonly number[], level = 0.95): MeanDifferenceTest {
  const n = diffs.length;
  const mean = diffs.reduce((a, b) => a + b, 0) / Math.max(1, n);
  if (n < 2) return { meanDiff: n ? mean : NaN, low: NaN, high: NaN, p: NaN, n };
  const sd = Math.sqrt(diffs.reduce((a, x) => a + (x - mean) ** 2, 0) / (n - 1));
  const i = meanInterval(n, mean, sd, level);
  const p = sd === 0 ? (mean === 0 ? 1 : 0) : 2 * (1 - tCdf(Math.abs(mean / (sd / Math.sqrt(n))), n - 1));
  return { meanDiff: mean, low: i.lo, high: i.hi, p, n };
}
