import { describe, expect, it } from 'vitest';
import {
  binomialCdf,
  incompleteBeta,
  logGamma,
  normalCdf,
  normalQuantile,
  tCdf,
  tQuantile,
} from '../../tasks/distributions.ts';

// Expected values worked out by hand from the formulas, checked against printed tables and scipy.
describe('distributions', () => {
  it('normal quantile matches the table', () => {
    expect(normalQuantile(0.975)).toBeCloseTo(1.959964, 6);
    expect(normalQuantile(0.5)).toBeCloseTo(0, 12);
    expect(normalQuantile(0.01)).toBeCloseTo(-2.326348, 6);
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

  it('Student t quantiles match the tables', () => {
    expect(tQuantile(0.975, 1)).toBeCloseTo(12.7062, 3);
    expect(tQuantile(0.975, 2)).toBeCloseTo(4.3027, 3);
    expect(tQuantile(0.975, 10)).toBeCloseTo(2.2281, 3);
    expect(tQuantile(0.975, 100)).toBeCloseTo(1.984, 3);
    expect(tCdf(0, 5)).toBeCloseTo(0.5, 12);
  });

  it('log-gamma and the incomplete beta match closed forms', () => {
    // Γ(5) = 24, Γ(1/2) = sqrt(pi); I_x(1, 1) = x; I_x(a, 1) = x^a; I_0.5(a, a) = 1/2 by symmetry.
    expect(logGamma(5)).toBeCloseTo(Math.log(24), 12);
    expect(logGamma(0.5)).toBeCloseTo(0.5 * Math.log(Math.PI), 12);
    expect(incompleteBeta(0.3, 1, 1)).toBeCloseTo(0.3, 12);
    expect(incompleteBeta(0.6, 3, 1)).toBeCloseTo(0.216, 12);
    expect(incompleteBeta(0.5, 4.5, 4.5)).toBeCloseTo(0.5, 12);
  });

  it('binomial CDF against hand sums', () => {
    expect(binomialCdf(2, 12, 0.5)).toBeCloseTo(79 / 4096, 12);
    expect(binomialCdf(0, 3, 0.2)).toBeCloseTo(0.512, 12);
    expect(binomialCdf(-1, 3, 0.2)).toBe(0);
    expect(binomialCdf(3, 3, 0.2)).toBe(1);
  });

  it('normal CDF against the table (scipy.stats.norm.cdf)', () => {
    expect(normalCdf(-1.96)).toBeCloseTo(0.0249979, 6);
    expect(normalCdf(0.5)).toBeCloseTo(0.6914625, 6);
    expect(normalCdf(0)).toBeCloseTo(0.5, 7);
  });
});
