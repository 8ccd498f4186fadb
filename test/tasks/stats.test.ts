import { describe, expect, it } from 'vitest';
import {
  clusterMeans,
  formatPercent,
  histogramMedian,
  meanInterval,
  meanIntervalOf,
  MeanAccumulator,
  pairedBootstrap,
  percentile,
  quantileSorted,
  wilson,
  wilsonCount,
} from '../../tasks/stats.ts';

// Expected values worked out by hand from the formulas (see comments) and checked against printed tables.
describe('report statistics', () => {
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
    expect(raw.lo).toBeCloseTo(4.5 - (12.7062 * Math.sqrt(0.5)) / Math.sqrt(2), 3);
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
});

// Reference values of the bootstrap come from an independent Python port of mulberry32 (script in each test's
// comment), so the constants can be recomputed.
describe('paired bootstrap of the mean difference', () => {
  const a = [0.9, 0.4, 0.7, 1.0, 0.3, 0.6, 0.8, 0.5, 0.2, 0.7];
  const b = [0.6, 0.5, 0.4, 0.8, 0.3, 0.2, 0.9, 0.1, 0.2, 0.4];

  it('seed 7, 2000 resamples: [0.05, 0.28] around 0.17, as an independent Python port computes', () => {
    // Python: mulberry32(7); each resample draws index int(u * n) n times; the interval is
    // numpy.quantile(means, [0.025, 0.975]) (linear) -> (0.05, 0.28). scipy.stats.bootstrap(percentile, its own
    // random stream, 20000 resamples) gives the same [0.05, 0.28] on this sample.
    const i = pairedBootstrap(a, b, { seed: 7, resamples: 2000 });
    expect(i.estimate).toBeCloseTo(0.17, 12);
    expect(i.lo).toBeCloseTo(0.05, 9);
    expect(i.hi).toBeCloseTo(0.28, 9);
    expect(i.n).toBe(10);
  });

  it('is reproducible with a seed and moves with another', () => {
    const x = pairedBootstrap(a, b, { seed: 3, resamples: 500 });
    expect(pairedBootstrap(a, b, { seed: 3, resamples: 500 })).toEqual(x);
    const many = [1, 2, 3, 4, 5, 6, 7, 8, 9].map((seed) => pairedBootstrap(a, b, { seed, resamples: 200 }).lo);
    expect(new Set(many).size).toBeGreaterThan(1);
  });

  it('degenerate samples: no games, one game, identical games', () => {
    expect(Number.isNaN(pairedBootstrap([], []).estimate)).toBe(true);
    const one = pairedBootstrap([1], [0]);
    expect(one.estimate).toBe(1);
    expect(Number.isNaN(one.lo)).toBe(true);
    const same = pairedBootstrap([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]);
    expect([same.lo, same.hi]).toEqual([0, 0]);
    expect(() => pairedBootstrap([1, 2], [1])).toThrow(/same games/);
  });

  it('clusters: whole tasks are resampled; with one game a task it is the game bootstrap', () => {
    // 5 tasks of 4 games each, every game of a task with the same difference (1, 1, 0, 0, 1): a resample's mean
    // is Binomial(5, 0.6)/5, whose 2.5% and 97.5% quantiles are 0.2 and 1.0. Resampling the 20 games as if
    // independent gives Binomial(20, 0.6)/20: 0.4 and 0.8, too narrow for what 5 tasks can tell.
    const d = [1, 1, 0, 0, 1].flatMap((x) => [x, x, x, x]);
    const tasks = [0, 1, 2, 3, 4].flatMap((t) => [`t${t}`, `t${t}`, `t${t}`, `t${t}`]);
    const zeros = d.map(() => 0);
    const byTask = pairedBootstrap(d, zeros, { seed: 5, resamples: 20_000, clusters: tasks });
    expect([byTask.estimate, byTask.lo, byTask.hi, byTask.n]).toEqual([0.6, 0.2, 1, 20]);
    const byGame = pairedBootstrap(d, zeros, { seed: 5, resamples: 20_000 });
    expect([byGame.lo, byGame.hi]).toEqual([0.4, 0.8]);
    expect(pairedBootstrap(a, b, { seed: 7, resamples: 2000, clusters: a.map((_, i) => `g${i}`) })).toEqual(
      pairedBootstrap(a, b, { seed: 7, resamples: 2000 }),
    );
    expect(clusterMeans([1, 0, 0.5, 0.5, 1], ['x', 'y', 'x', 'y', 'z'])).toEqual([0.75, 0.25, 1]);
    expect(() => pairedBootstrap([1, 2], [1, 2], { clusters: ['t'] })).toThrow(/cluster labels/);
  });

  it('linear quantile of sorted values (numpy default)', () => {
    expect(quantileSorted([1, 2, 3, 4], 0.5)).toBe(2.5);
    expect(quantileSorted([1, 2, 3, 4], 0.025)).toBeCloseTo(1.075, 12);
  });

  it('nearest-rank percentile of unsorted values (an observed value)', () => {
    const xs = [40, 10, 30, 20, 50, 60, 70, 80, 90, 100];
    expect(percentile(xs, 50)).toBe(50);
    expect(percentile(xs, 99)).toBe(100);
    expect(percentile(xs, 0)).toBe(10);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNaN();
    expect(xs[0]).toBe(40);
  });
});

describe('oneSampleT', () => {
  it('matches a hand computation and is undefined below two units', async () => {
    const { oneSampleT } = await import('../../tasks/stats.ts');
    // diffs 0.1, 0.2, 0.3: mean 0.2, sd 0.1, se 0.0577, t = 3.464 on 2 df, two-sided p = 0.0742; t(0.975, 2) = 4.303.
    const r = oneSampleT([0.1, 0.2, 0.3]);
    expect(r.meanDiff).toBeCloseTo(0.2, 12);
    expect(r.p).toBeCloseTo(0.0742, 3);
    expect(r.low).toBeCloseTo(0.2 - 4.303 * 0.0577, 2);
    expect(r.high).toBeCloseTo(0.2 + 4.303 * 0.0577, 2);
    expect(oneSampleT([0.5]).p).toBeNaN();
    expect(oneSampleT([0.1, 0.1]).p).toBe(0);
    expect(oneSampleT([0, 0]).p).toBe(1);
  });
});
