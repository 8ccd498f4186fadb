// Confidence intervals for evaluation tables. Pure functions, checked against hand-computed values.

export interface Interval {
  estimate: number;
  low: number;
  high: number;
}

/** Two-sided standard normal quantile for 95%. */
export const Z95 = 1.959963984540054;

/** Wilson score interval for a proportion k/n (95% by default). n = 0 gives [0, 1]. */
export function wilson(k: number, n: number, z = Z95): Interval {
  if (!Number.isInteger(k) || !Number.isInteger(n) || k < 0 || n < 0 || k > n) throw new RangeError(`wilson: need integers 0 <= k <= n, got ${k}/${n}`);
  if (n === 0) return { estimate: 0, low: 0, high: 1 };
  const p = k / n;
  const z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  // At k = 0 (or k = n) the bound is exactly 0 (1); the formula leaves rounding noise there.
  return { estimate: p, low: k === 0 ? 0 : Math.max(0, centre - half), high: k === n ? 1 : Math.min(1, centre + half) };
}

/** ln Γ(x) (Lanczos, g = 7), for the incomplete beta function. */
function lnGamma(x: number): number {
  const c = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - lnGamma(1 - x);
  x -= 1;
  let a = c[0]!;
  const t = x + 7.5;
  for (let i = 1; i < 9; i++) a += c[i]! / (x + i);
  return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(a);
}

/** Regularised incomplete beta I_x(a, b) by Lentz's continued fraction (Numerical Recipes betacf). */
function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(lnGamma(a + b) - lnGamma(a) - lnGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  if (x > (a + 1) / (a + b + 2)) return 1 - incompleteBeta(1 - x, b, a);
  let f = 1;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < 1e-30) d = 1e-30;
  d = 1 / d;
  f = d;
  for (let m = 1; m <= 300; m++) {
    for (const num of [(m * (b - m) * x) / ((a + 2 * m - 1) * (a + 2 * m)), -((a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1))]) {
      d = 1 + num * d;
      if (Math.abs(d) < 1e-30) d = 1e-30;
      c = 1 + num / c;
      if (Math.abs(c) < 1e-30) c = 1e-30;
      d = 1 / d;
      f *= d * c;
    }
    if (Math.abs(d * c - 1) < 1e-15) break;
  }
  return (front * f) / a;
}

/** CDF of Student's t with `df` degrees of freedom. */
export function studentTCdf(t: number, df: number): number {
  const x = df / (df + t * t);
  const tail = 0.5 * incompleteBeta(x, df / 2, 0.5);
  return t >= 0 ? 1 - tail : tail;
}

/** The t quantile q with P(T <= q) = p, by bisection on the CDF. */
export function studentTQuantile(p: number, df: number): number {
  if (!(p > 0 && p < 1) || !(df > 0)) throw new RangeError(`studentTQuantile: need 0 < p < 1 and df > 0, got p=${p}, df=${df}`);
  let lo = -1e3;
  let hi = 1e3;
  for (let i = 0; i < 200; i++) {
    const mid = (lo + hi) / 2;
    if (studentTCdf(mid, df) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** Mean with a t interval (95% by default). One value: the interval is the point; none: NaN. */
export function meanInterval(values: readonly number[], level = 0.95): Interval {
  const n = values.length;
  if (n === 0) return { estimate: NaN, low: NaN, high: NaN };
  const mean = values.reduce((a, b) => a + b, 0) / n;
  if (n === 1) return { estimate: mean, low: mean, high: mean };
  const variance = values.reduce((a, v) => a + (v - mean) ** 2, 0) / (n - 1);
  const half = studentTQuantile(1 - (1 - level) / 2, n - 1) * Math.sqrt(variance / n);
  return { estimate: mean, low: mean - half, high: mean + half };
}

/** "41.7 [22.8, 63.1]" in percent. */
export function formatPercent(i: Interval, digits = 1): string {
  const f = (x: number) => (x * 100).toFixed(digits);
  return `${f(i.estimate)} [${f(i.low)}, ${f(i.high)}]`;
}
