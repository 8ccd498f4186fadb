import { describe, expect, it } from 'vitest';
import { createRng } from '../../tasks/random.ts';

describe('the seeded random generator', () => {
  it('has a PRNG that is seed-stable and roughly uniform', () => {
    const a = createRng(7);
    const b = createRng(7);
    const xs = Array.from({ length: 2000 }, () => a());
    expect(Array.from({ length: 2000 }, () => b())).toEqual(xs);
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    expect(Math.abs(mean - 0.5)).toBeLessThan(0.03);
  });
});
