import { describe, expect, it } from 'vitest';
import { formatPercent, histogramMedian, incompleteBeta, logGamma, meanInterval, meanIntervalOf, MeanAccumulator, normalQuantile, tCdf, tQuantile, wilson, wilsonCount } from '../../tasks/stats.ts';

// Expected values worked out by hand from the formulas (see comments) and checked against printed tables.
describe('report statistics', () => {
  it('normal quantile matches the table', () => {
    expect(normalQuantile(0.975)).toBeCloseTo(1.959964, 6);
    expect(normalQuantile(0.5)).toBeCloseTo(0, 12);
    expect(normalQuantile(0.01)).toBeCloseTo(-2.326348, 6);
  });

  it('Wilson interval, 8 of 10: centre 0.99208/1.38416, half-width 1.96*sqrt(0.025604)/1.38416', () => {
    const w = wilson(8, 10);
    expect(w.estimate).toBe(0.8);
    expect(w.lo).toBeCloseTo(0.49016, 4);
    expect(w.hi).toBeCloseTo(0.94332, 4);
  });

  it('Wilson interval, 0 of 10 stays inside [0, 1]: upper = 2 * 0.19208/1.38416', () => {
    const w = wilson(0, 10);
    expect(w.lo).toBe(0);
    expect(w.hi).toBeCloseTo(0.27754, 4);
    const all = wilson(10, 10);
    expect(all.hi).toBe(1);
    expect(all.lo).toBeCloseTo(1 - 0.27754, 4);
  });

  it('Wilson rejects impossible counts and returns NaN for no data', () => {
    expect(() => wilson(11, 10)).toThrow(RangeError);
    expect(Number.isNaN(wilson(0, 0).estimate)).toBe(true);
  });

  it('Student t quantiles match the printed table', () => {
    expect(tQuantile(0.975, 1)).toBeCloseTo(12.7062, 3);
    expect(tQuantile(0.975, 4)).toBeCloseTo(2.776445, 5);
    expect(tQuantile(0.975, 10)).toBeCloseTo(2.228139, 5);
    expect(tQuantile(0.975, 30)).toBeCloseTo(2.042272, 5);
    expect(tQuantile(0.025, 4)).toBeCloseTo(-2.776445, 5);
    expect(tCdf(0, 7)).toBeCloseTo(0.5, 12);
    // df = 1 is the Cauchy distribution: CDF(1) = 3/4.
    expect(tCdf(1, 1)).toBeCloseTo(0.75, 10);
  });

  it('t interval of 1..5: mean 3, sd sqrt(2.5), half-width 2.776445 * sqrt(2.5)/sqrt(5) = 1.963243', () => {
    const ci = meanIntervalOf([1, 2, 3, 4, 5]);
    expect(ci.estimate).toBe(3);
    expect(ci.lo).toBeCloseTo(1.036757, 5);
    expect(ci.hi).toBeCloseTo(4.963243, 5);
  });

  it('streaming mean and variance agree with the two-pass formulas', () => {
    const xs = [0.1, 0.4, 0.4, 0.9, 1, 0];
    const acc = new MeanAccumulator();
    for (const x of xs) acc.add(x);
    const mean = xs.reduce((a, b) => a + b) / xs.length;
    const variance = xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (xs.length - 1);
    expect(acc.mean).toBeCloseTo(mean, 12);
    expect(acc.variance).toBeCloseTo(variance, 12);
    expect(() => acc.add(NaN)).toThrow(RangeError);
  });

  it('one value has no interval; none has no estimate', () => {
    const one = meanInterval(1, 0.5, NaN);
    expect(one.estimate).toBe(0.5);
    expect(Number.isNaN(one.lo)).toBe(true);
    expect(Number.isNaN(meanInterval(0, 0, 0).estimate)).toBe(true);
  });

  it('histogram median', () => {
    expect(histogramMedian([0, 1, 1, 1])).toBe(2); // values 1,2,3
    expect(histogramMedian([0, 2, 0, 2])).toBe(2); // 1,1,3,3
    expect(Number.isNaN(histogramMedian([0, 0]))).toBe(true);
  });
});

describe('interval bounds', () => {
  it('clips a t interval to the scale of the values', () => {
    // Ratings 4 and 5: mean 4.5, sd sqrt(0.5), t(0.975, 1) = 12.7062 -> raw [-1.85, 10.85], clipped to [1, 5].
    const acc = new MeanAccumulator();
    acc.add(4);
    acc.add(5);
    const raw = acc.interval();
    expect(raw.lo).toBeCloseTo(4.5 - 12.7062 * Math.sqrt(0.5) / Math.sqrt(2), 3);
    const clipped = acc.interval(0.95, [1, 5]);
    expect(clipped.lo).toBe(1);
    expect(clipped.hi).toBe(5);
  });
});

describe('confidence intervals against hand-computed values', () => {
  it('Wilson interval of 5/10: centre 0.5, half-width 1.96·sqrt(0.025 + 0.00960)/1.384', () => {
    // z² = 3.8415; denominator 1 + 0.38415 = 1.38415; centre (0.5 + 0.19207)/1.38415 = 0.5;
    // half = 1.95996/1.38415 · sqrt(0.025 + 3.8415/400) = 1.41599 · 0.18601 = 0.26340.
    const i = wilson(5, 10);
    expect(i.estimate).toBe(0.5);
    expect(i.lo).toBeCloseTo(0.2366, 4);
    expect(i.hi).toBeCloseTo(0.7634, 4);
  });

  it('Wilson interval of 0/20 starts at 0 and is not degenerate', () => {
    // centre = (0 + 3.8415/40) / (1 + 3.8415/20) = 0.096037/1.192073 = 0.080563; half equals the centre.
    const i = wilson(0, 20);
    expect(i.lo).toBeCloseTo(0, 10);
    expect(i.hi).toBeCloseTo(0.16113, 4);
  });

  it('rejects impossible counts', () => {
    expect(() => wilson(3, 2)).toThrow(RangeError);
    expect(() => wilsonCount(3, 2)).toThrow(RangeError);
    // Whole-game counts: a fractional one is a bug. Half wins (ties) go through wilson, which accepts them.
    expect(() => wilsonCount(1.5, 2)).toThrow(RangeError);
    expect(wilson(1.5, 2).estimate).toBe(0.75);
    expect(() => wilson(NaN, 2)).toThrow(RangeError);
  });

  it('Student t quantiles match the tables', () => {
    expect(tQuantile(0.975, 1)).toBeCloseTo(12.7062, 3);
    expect(tQuantile(0.975, 2)).toBeCloseTo(4.3027, 3);
    expect(tQuantile(0.975, 10)).toBeCloseTo(2.2281, 3);
    expect(tQuantile(0.975, 100)).toBeCloseTo(1.9840, 3);
    expect(tCdf(0, 5)).toBeCloseTo(0.5, 12);
  });

  it('t interval of [1, 2, 3]: mean 2, s = 1, half-width 4.3027/sqrt(3) = 2.4841', () => {
    const i = meanIntervalOf([1, 2, 3]);
    expect(i.estimate).toBe(2);
    expect(i.lo).toBeCloseTo(2 - 2.4841, 3);
    expect(i.hi).toBeCloseTo(2 + 2.4841, 3);
  });

  it('a single value has no interval (no spread to estimate); identical values give a zero-width one', () => {
    // The trainer's own copy used to report [0.4, 0.4] here; the shared module says "no interval" instead.
    const one = meanIntervalOf([0.4]);
    expect(one.estimate).toBe(0.4);
    expect(one.n).toBe(1);
    expect(Number.isNaN(one.lo) && Number.isNaN(one.hi)).toBe(true);
    expect(formatPercent(one)).toBe('40.0 (n=1)');
    const i = meanIntervalOf([0.5, 0.5, 0.5]);
    expect(i.hi - i.lo).toBeCloseTo(0, 12);
  });

  it('formats intervals in percent', () => {
    expect(formatPercent(wilson(5, 10))).toBe('50.0 [23.7, 76.3]');
  });

  it('log-gamma and the incomplete beta match closed forms', () => {
    // Γ(5) = 24, Γ(1/2) = sqrt(pi); I_x(1, 1) = x; I_x(a, 1) = x^a; I_0.5(a, a) = 1/2 by symmetry.
    expect(logGamma(5)).toBeCloseTo(Math.log(24), 12);
    expect(logGamma(0.5)).toBeCloseTo(0.5 * Math.log(Math.PI), 12);
    expect(incompleteBeta(0.3, 1, 1)).toBeCloseTo(0.3, 12);
    expect(incompleteBeta(0.6, 3, 1)).toBeCloseTo(0.216, 12);
    expect(incompleteBeta(0.5, 4.5, 4.5)).toBeCloseTo(0.5, 12);
  });
});
