import { describe, expect, it } from 'vitest';
import { histogramMedian, meanInterval, meanIntervalOf, MeanAccumulator, normalQuantile, tCdf, tQuantile, wilson } from '../../bot/report/stats.ts';

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
