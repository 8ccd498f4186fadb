import { describe, expect, it } from 'vitest';
import { constants, num, pick, py, r2, randInt, shuffled, valueOf } from '../../tasks/mini-source.ts';
import { createRng } from '../../tasks/random.ts';

describe('ColBench-mini template tools', () => {
  it('writes Python literals, escaping quotes and backslashes, and refuses what Python cannot read back', () => {
    expect(py(true)).toBe('True');
    expect(py(false)).toBe('False');
    expect(py(4.25)).toBe('4.25');
    expect(py("it's a \\ path")).toBe("'it\\'s a \\\\ path'");
    expect(py(['a', 1, false])).toBe("['a', 1, False]");
    expect(() => py(Number.NaN)).toThrow(/no Python literal/);
  });

  it("writes the facts as commented constants, in the facts' order, and names a missing or mistyped value", () => {
    const facts = [
      { key: 'LIMIT', kind: 'number' as const, comment: 'largest allowed', questions: [], guess: 1, pool: [2] },
      { key: 'LABEL', kind: 'string' as const, comment: 'shown text', questions: [], guess: '', pool: ['x'] },
    ];
    expect(constants(facts, { LABEL: 'ok', LIMIT: 3 })).toBe(
      "LIMIT = 3  # largest allowed\nLABEL = 'ok'  # shown text",
    );
    expect(() => constants(facts, { LIMIT: 3 })).toThrow(/missing value for LABEL/);
    expect(valueOf({ A: 0 }, 'A')).toBe(0);
    expect(num({ A: 2 }, 'A')).toBe(2);
    expect(() => num({ A: 'two' }, 'A')).toThrow(/A must be a number/);
    expect(r2(0.1 + 0.2)).toBe(0.3);
  });

  it('draws from the seeded generator: the same seed gives the same draws, within bounds', () => {
    const draws = (seed: number) => {
      const rng = createRng(seed);
      return { picked: pick(rng, ['a', 'b', 'c']), int: randInt(rng, 3, 5), order: shuffled(rng, [1, 2, 3, 4, 5]) };
    };
    expect(draws(4)).toEqual(draws(4));
    const rng = createRng(9);
    const ints = Array.from({ length: 200 }, () => randInt(rng, 3, 5));
    expect(new Set(ints)).toEqual(new Set([3, 4, 5]));
    const items = [1, 2, 3, 4, 5];
    const out = shuffled(rng, items);
    expect(items).toEqual([1, 2, 3, 4, 5]);
    expect([...out].sort()).toEqual(items);
    expect(() => pick(rng, [])).toThrow(/empty list/);
  });
});
