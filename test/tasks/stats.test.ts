import { describe, expect, it } from 'vitest';
import {
  binomialCdf, clusterMeans, formatPercent, histogramMedian, incompleteBeta, logGamma, mcnemarClustered, mcnemarExact, mcnemarPaired, meanInterval, meanIntervalOf, MeanAccumulator,
  normalCdf, normalQuantile, pairedBootstrap, percentile, pairedMeanGames, pairedSuccessGames, pairedSuccessPower, quantileSorted, varianceComponents, tCdf, tQuantile, wilcoxonSignedRank, wilson, wilsonCount,
} from '../../tasks/stats.ts';

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

// Paired comparisons. Reference values come from scipy 1.17.1 / numpy 2.4.6 and from independent Python
// implementations (brute-force enumeration, a Python port of mulberry32): the script is reproduced in the
// comment of each test that needs it, so the constants can be recomputed.
describe('McNemar exact test', () => {
  it('b = 10, c = 2: p = 2 * (C(12,0) + C(12,1) + C(12,2)) / 2^12 = 2 * 79/4096 = 0.0385742', () => {
    // scipy.stats.binomtest(2, 12, 0.5).pvalue == 0.03857421875
    const r = mcnemarExact(10, 2);
    expect(r.pValue).toBeCloseTo(0.03857421875, 12);
    expect(mcnemarExact(2, 10).pValue).toBeCloseTo(0.03857421875, 12);
  });

  it('0 vs 5 discordant games: p = 2/32 = 0.0625 (five straight wins are not yet significant)', () => {
    expect(mcnemarExact(5, 0).pValue).toBeCloseTo(0.0625, 12);
  });

  it('no discordant game, or an even split: p = 1', () => {
    expect(mcnemarExact(0, 0).pValue).toBe(1);
    expect(mcnemarExact(3, 3).pValue).toBe(1);
  });

  it('counts the discordant pairs of paired flags and rejects unpaired or fractional input', () => {
    const a = [true, true, false, true, false, true];
    const b = [false, true, false, false, true, false];
    const r = mcnemarPaired(a, b);
    expect([r.aOnly, r.bOnly]).toEqual([3, 1]);
    // 2 * P(Bin(4, 1/2) <= 1) = 2 * 5/16
    expect(r.pValue).toBeCloseTo(0.625, 12);
    expect(() => mcnemarPaired([true], [true, false])).toThrow(/same games/);
    expect(() => mcnemarExact(1.5, 2)).toThrow(RangeError);
  });

  it('clustered McNemar (Durkalski 2003) on a fixed table: cluster sums 2, 1, 0, -1, 3 give X² = 25/15, p = 0.19671', () => {
    // Per cluster (a task): A-only minus B-only games. t1: +2 (two A-only), t2: +1, t3: one each way, t4: -1,
    // t5: +3. X² = (2+1+0-1+3)² / (4+1+0+1+9) = 25/15; p = erfc(sqrt(X²/2)) = 0.196706 (Python math.erfc).
    const rows: [boolean, boolean, string][] = [
      [true, false, 't1'], [true, false, 't1'], [true, true, 't1'],
      [true, false, 't2'], [false, false, 't2'],
      [true, false, 't3'], [false, true, 't3'],
      [false, true, 't4'], [true, true, 't4'],
      [true, false, 't5'], [true, false, 't5'], [true, false, 't5'],
    ];
    const r = mcnemarClustered(rows.map((x) => x[0]), rows.map((x) => x[1]), rows.map((x) => x[2]));
    expect([r.aOnly, r.bOnly, r.method]).toEqual([7, 2, 'clustered']);
    expect(r.pValue).toBeCloseTo(0.196706, 5);
    // mcnemarPaired takes the clustered test when a cluster repeats, the exact one when none does.
    expect(mcnemarPaired(rows.map((x) => x[0]), rows.map((x) => x[1]), rows.map((x) => x[2]))).toEqual(r);
    const a = [true, true, false, true, false, true];
    const b = [false, true, false, false, true, false];
    expect(mcnemarPaired(a, b, a.map((_, i) => `t${i}`))).toEqual(mcnemarPaired(a, b));
    // One game a cluster: X² is McNemar's (b - c)² / (b + c) = 4/4, p = 0.317311.
    expect(mcnemarClustered(a, b, a.map((_, i) => `t${i}`)).pValue).toBeCloseTo(0.317311, 5);
    expect(mcnemarClustered([true], [true], ['t']).pValue).toBe(1);
  });

  it('binomial CDF against hand sums', () => {
    expect(binomialCdf(2, 12, 0.5)).toBeCloseTo(79 / 4096, 12);
    expect(binomialCdf(0, 3, 0.2)).toBeCloseTo(0.512, 12);
    expect(binomialCdf(-1, 3, 0.2)).toBe(0);
    expect(binomialCdf(3, 3, 0.2)).toBe(1);
  });
});

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
    expect(pairedBootstrap(a, b, { seed: 7, resamples: 2000, clusters: a.map((_, i) => `g${i}`) })).toEqual(pairedBootstrap(a, b, { seed: 7, resamples: 2000 }));
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

describe('Wilcoxon signed-rank test', () => {
  it('no ties: d = 1..7, -8 -> W+ = 28, exact p = 0.1953125 (scipy.stats.wilcoxon(method="exact") agrees)', () => {
    const d = [1, 2, 3, 4, 5, 6, 7, -8];
    const r = wilcoxonSignedRank(d, d.map(() => 0));
    expect(r.wPlus).toBe(28);
    expect(r.wMinus).toBe(8);
    expect(r.method).toBe('exact');
    expect(r.pValue).toBeCloseTo(0.1953125, 12);
  });

  it('a zero and tied |d|: the zero is dropped, 0.3/0.3 and 0.1/-0.1 share midranks; exact conditional p = 0.03515625', () => {
    // Brute force in Python over the 2^9 sign flips of scipy.stats.rankdata(|d|) with the zero dropped:
    // W+ = 40.5, p = 2 * min(P(W+ <= 40.5), P(W+ >= 40.5)) = 0.03515625. (scipy's own "exact" method ignores the
    // ties and reports 0.0390625; the enumeration over the midranks is the exact permutation test.)
    const d = [0.1, 0.5, -0.2, 0.7, 0.3, 0.0, 0.3, -0.1, 0.6, 0.4];
    const r = wilcoxonSignedRank(d, d.map(() => 0));
    expect(r.zeros).toBe(1);
    expect(r.n).toBe(9);
    expect(r.wPlus).toBe(40.5);
    expect(r.pValue).toBeCloseTo(0.03515625, 12);
  });

  it('n = 80 uses the normal approximation with the tie correction, as scipy does (p = 0.51378)', () => {
    // numpy.random.default_rng(3).normal(0.15, 1, 80) rounded to 1 decimal (two zeros, many ties);
    // scipy.stats.wilcoxon(z, zero_method="wilcox", method="approx", correction=False) -> W- = 1409.5, p = 0.5137770764.
    const z = [2.2, -2.4, 0.6, -0.4, -0.3, -0.1, -1.9, -0.1, -0.7, 3.5, 0.4, -0.2, -0.1, -0.5, -0.9, -0.2, 0.6, -0.1, 1.1, -0.0, 0.2, 1.7, 0.7, -0.4, -0.0, 0.7, 2.1, -0.1, -0.1, 1.2, -0.7, -0.1, 1.0, 0.7, 0.2, 0.8, -2.7, 1.2, -0.8, -1.5, 0.4, 0.9, -0.3, -0.9, 0.2, 0.1, 1.6, 0.9, 0.3, 1.3, -0.1, -0.8, 0.7, 0.7, -0.1, -0.6, 0.4, -2.3, 0.8, 0.6, -1.5, 0.2, -0.8, 0.9, -1.9, -0.8, 0.9, 1.3, -2.0, -0.3, 0.5, -0.5, 1.7, -1.0, 0.5, -0.9, 1.6, 0.1, -0.2, -1.6];
    const r = wilcoxonSignedRank(z, z.map(() => 0));
    expect(r.method).toBe('normal');
    expect(r.zeros).toBe(2);
    expect(Math.min(r.wPlus, r.wMinus)).toBe(1409.5);
    expect(r.pValue).toBeCloseTo(0.5137770764, 6);
  });

  it('all pairs equal: nothing to test, p = 1', () => {
    const r = wilcoxonSignedRank([0.2, 0.4], [0.2, 0.4]);
    expect(r.n).toBe(0);
    expect(r.pValue).toBe(1);
  });

  it('normal CDF against the table (scipy.stats.norm.cdf)', () => {
    expect(normalCdf(-1.96)).toBeCloseTo(0.0249979, 6);
    expect(normalCdf(0.5)).toBeCloseTo(0.6914625, 6);
    expect(normalCdf(0)).toBeCloseTo(0.5, 7);
  });
});

describe('games needed for a paired success comparison', () => {
  it("Connor's formula, psi = 0.3, delta = 0.1, alpha 0.05, power 0.8: n = 233.09 -> 234 games", () => {
    // (1.959964 * sqrt(0.3) + 0.841621 * sqrt(0.29))^2 / 0.01 = 233.0945 (computed with scipy.stats.norm.ppf).
    const plan = pairedSuccessGames({ delta: 0.1, discordance: 0.3 });
    expect(plan.games).toBe(234);
    // And the power of 234 games is just over 0.8: Φ((0.1 √234 - 1.959964 √0.3) / √0.29) = 0.80154.
    expect(pairedSuccessPower({ games: 234, delta: 0.1, discordance: 0.3 })).toBeCloseTo(0.80154, 4);
  });

  it('without a known discordance, assumes independent games at the worst baseline (0.45 vs 0.55: psi = 0.505, n = 394.002 -> 395)', () => {
    const plan = pairedSuccessGames({ delta: 0.1 });
    expect(plan.discordance).toBeCloseTo(0.505, 12);
    expect(plan.games).toBe(395);
    // A low baseline needs far fewer games: 0.05 vs 0.15 -> psi = 0.05*0.85 + 0.15*0.95 = 0.185.
    expect(pairedSuccessGames({ delta: 0.1, baseline: 0.05 }).discordance).toBeCloseTo(0.185, 12);
  });

  it('variance components: [0, 2] and [4, 6] give MSW = 4/2 = 2, MSB = 2 * (4 + 4) / 1 = 16, between = (16 - 2) / 2 = 7', () => {
    expect(varianceComponents([0, 2, 4, 6], ['a', 'a', 'b', 'b'])).toEqual({ clusters: 2, perCluster: 2, within: 2, between: 7 });
    // Clusters no more different than their values: the between part is clipped at 0, not negative.
    expect(varianceComponents([0, 4, 1, 3], ['a', 'a', 'b', 'b']).between).toBe(0);
    expect(() => varianceComponents([1, 2, 3], ['a', 'a', 'b'])).toThrow(RangeError);
  });

  it('paired mean games: delta 0.5, sd 1 -> ((1.959964 + 0.841621) * 2)^2 = 31.396 -> 32', () => {
    expect(pairedMeanGames({ delta: 0.5, sd: 1 })).toBe(32);
    expect(pairedMeanGames({ delta: -0.5, sd: 1 })).toBe(32);
    expect(() => pairedMeanGames({ delta: 0, sd: 1 })).toThrow(RangeError);
  });

  it('rejects impossible plans', () => {
    expect(() => pairedSuccessGames({ delta: 0 })).toThrow(RangeError);
    expect(() => pairedSuccessGames({ delta: 0.3, discordance: 0.05 })).toThrow(/cannot produce/);
  });
});
