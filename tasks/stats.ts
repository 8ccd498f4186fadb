// Interval estimates shared by the bot's reports, the trainer's evaluation tables and the frontend win rate, as
// pure functions: Wilson score intervals for proportions (success rate, win rate), Student-t intervals for means
// (% tests passed, similarity, rating, turns). Both behave at the small counts a young deployment has, where the
// normal approximation does not (Wilson never leaves [0, 1]).

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
