import { describe, expect, it } from 'vitest';
import { mcnemarClustered, mcnemarExact, mcnemarPaired, wilcoxonSignedRank } from '../../tasks/paired-tests.ts';

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
      [true, false, 't1'],
      [true, false, 't1'],
      [true, true, 't1'],
      [true, false, 't2'],
      [false, false, 't2'],
      [true, false, 't3'],
      [false, true, 't3'],
      [false, true, 't4'],
      [true, true, 't4'],
      [true, false, 't5'],
      [true, false, 't5'],
      [true, false, 't5'],
    ];
    const r = mcnemarClustered(
      rows.map((x) => x[0]),
      rows.map((x) => x[1]),
      rows.map((x) => x[2]),
    );
    expect([r.aOnly, r.bOnly, r.method]).toEqual([7, 2, 'clustered']);
    expect(r.pValue).toBeCloseTo(0.196706, 5);
    // mcnemarPaired takes the clustered test when a cluster repeats, the exact one when none does.
    expect(
      mcnemarPaired(
        rows.map((x) => x[0]),
        rows.map((x) => x[1]),
        rows.map((x) => x[2]),
      ),
    ).toEqual(r);
    const a = [true, true, false, true, false, true];
    const b = [false, true, false, false, true, false];
    expect(
      mcnemarPaired(
        a,
        b,
        a.map((_, i) => `t${i}`),
      ),
    ).toEqual(mcnemarPaired(a, b));
    // One game a cluster: X² is McNemar's (b - c)² / (b + c) = 4/4, p = 0.317311.
    expect(
      mcnemarClustered(
        a,
        b,
        a.map((_, i) => `t${i}`),
      ).pValue,
    ).toBeCloseTo(0.317311, 5);
    expect(mcnemarClustered([true], [true], ['t']).pValue).toBe(1);
  });
});

describe('Wilcoxon signed-rank test', () => {
  it('no ties: d = 1..7, -8 -> W+ = 28, exact p = 0.1953125 (scipy.stats.wilcoxon(method="exact") agrees)', () => {
    const d = [1, 2, 3, 4, 5, 6, 7, -8];
    const r = wilcoxonSignedRank(
      d,
      d.map(() => 0),
    );
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
    const r = wilcoxonSignedRank(
      d,
      d.map(() => 0),
    );
    expect(r.zeros).toBe(1);
    expect(r.n).toBe(9);
    expect(r.wPlus).toBe(40.5);
    expect(r.pValue).toBeCloseTo(0.03515625, 12);
  });

  it('n = 80 uses the normal approximation with the tie correction, as scipy does (p = 0.51378)', () => {
    // numpy.random.default_rng(3).normal(0.15, 1, 80) rounded to 1 decimal (two zeros, many ties);
    // scipy.stats.wilcoxon(z, zero_method="wilcox", method="approx", correction=False) -> W- = 1409.5, p = 0.5137770764.
    const z = [
      2.2, -2.4, 0.6, -0.4, -0.3, -0.1, -1.9, -0.1, -0.7, 3.5, 0.4, -0.2, -0.1, -0.5, -0.9, -0.2, 0.6, -0.1, 1.1, -0.0,
      0.2, 1.7, 0.7, -0.4, -0.0, 0.7, 2.1, -0.1, -0.1, 1.2, -0.7, -0.1, 1.0, 0.7, 0.2, 0.8, -2.7, 1.2, -0.8, -1.5, 0.4,
      0.9, -0.3, -0.9, 0.2, 0.1, 1.6, 0.9, 0.3, 1.3, -0.1, -0.8, 0.7, 0.7, -0.1, -0.6, 0.4, -2.3, 0.8, 0.6, -1.5, 0.2,
      -0.8, 0.9, -1.9, -0.8, 0.9, 1.3, -2.0, -0.3, 0.5, -0.5, 1.7, -1.0, 0.5, -0.9, 1.6, 0.1, -0.2, -1.6,
    ];
    const r = wilcoxonSignedRank(
      z,
      z.map(() => 0),
    );
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
});
