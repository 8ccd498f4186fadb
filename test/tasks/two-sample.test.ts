// Independent two-group comparisons against reference values (scipy 1.17 for Fisher and Welch; Newcombe 1998,
// method 10, for the difference of proportions).
import { describe, expect, it } from 'vitest';
import { compareMeans, compareProportions, fisherExact } from '../../tasks/two-sample.ts';

describe('two independent groups', () => {
  it("Fisher's exact test matches scipy.stats.fisher_exact", () => {
    expect(fisherExact(7, 10, 2, 10)).toBeCloseTo(0.06977851869492736, 9);
    expect(fisherExact(30, 100, 45, 100)).toBeCloseTo(0.040534006514982644, 9);
    expect(fisherExact(5, 5, 5, 5)).toBeCloseTo(1, 12);
    expect(() => fisherExact(3, 2, 0, 1)).toThrow(RangeError);
  });

  it("Newcombe's interval for a difference of proportions (his example: 56/70 vs 48/80)", () => {
    const d = compareProportions(56, 70, 48, 80);
    expect(d.difference.estimate).toBeCloseTo(0.2, 10);
    expect(d.difference.lo).toBeCloseTo(0.0524, 4);
    expect(d.difference.hi).toBeCloseTo(0.3339, 4);
    expect(Number.isNaN(compareProportions(0, 0, 1, 2).pValue)).toBe(true);
  });

  it("Welch's t test and interval match scipy.stats.ttest_ind(equal_var=False)", () => {
    const d = compareMeans([0.2, 0.5, 0.9, 1.0, 0.4], [0.1, 0.3, 0.2, 0.6]);
    expect(d.pValue).toBeCloseTo(0.1526365969980371, 6);
    expect(d.difference.lo).toBeCloseTo(-0.14337479074909448, 6);
    expect(d.difference.hi).toBeCloseTo(0.7433747907490944, 6);
    expect(Number.isNaN(compareMeans([1], [2, 3]).pValue)).toBe(true);
    expect(compareMeans([2, 2], [2, 2]).pValue).toBe(1);
  });
});
