import { describe, expect, it } from 'vitest';
import { meanInterval, studentTCdf, studentTQuantile, wilson } from '../../trainer/stats.ts';

describe('confidence intervals against hand-computed values', () => {
  it('Wilson interval of 5/10: centre 0.5, half-width 1.96·sqrt(0.025 + 0.00960)/1.384', () => {
    // z² = 3.8415; denominator 1 + 0.38415 = 1.38415; centre (0.5 + 0.19207)/1.38415 = 0.5;
    // half = 1.95996/1.38415 · sqrt(0.025 + 3.8415/400) = 1.41599 · 0.18601 = 0.26340.
    const i = wilson(5, 10);
    expect(i.estimate).toBe(0.5);
    expect(i.low).toBeCloseTo(0.2366, 4);
    expect(i.high).toBeCloseTo(0.7634, 4);
  });

  it('Wilson interval of 0/20 starts at 0 and is not degenerate', () => {
    // centre = (0 + 3.8415/40) / (1 + 3.8415/20) = 0.096037/1.192073 = 0.080563; half equals the centre.
    const i = wilson(0, 20);
    expect(i.low).toBeCloseTo(0, 10);
    expect(i.high).toBeCloseTo(0.16113, 4);
  });

  it('rejects impossible counts', () => {
    expect(() => wilson(3, 2)).toThrow(RangeError);
    expect(() => wilson(1.5, 2)).toThrow(RangeError);
  });

  it('Student t quantiles match the tables', () => {
    expect(studentTQuantile(0.975, 1)).toBeCloseTo(12.7062, 3);
    expect(studentTQuantile(0.975, 2)).toBeCloseTo(4.3027, 3);
    expect(studentTQuantile(0.975, 10)).toBeCloseTo(2.2281, 3);
    expect(studentTQuantile(0.975, 100)).toBeCloseTo(1.9840, 3);
    expect(studentTCdf(0, 5)).toBeCloseTo(0.5, 12);
  });

  it('t interval of [1, 2, 3]: mean 2, s = 1, half-width 4.3027/sqrt(3) = 2.4841', () => {
    const i = meanInterval([1, 2, 3]);
    expect(i.estimate).toBe(2);
    expect(i.low).toBeCloseTo(2 - 2.4841, 3);
    expect(i.high).toBeCloseTo(2 + 2.4841, 3);
  });

  it('a single value or identical values give a zero-width interval', () => {
    expect(meanInterval([0.4])).toEqual({ estimate: 0.4, low: 0.4, high: 0.4 });
    const i = meanInterval([0.5, 0.5, 0.5]);
    expect(i.high - i.low).toBeCloseTo(0, 12);
  });
});
