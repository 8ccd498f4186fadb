import { describe, expect, it } from 'vitest';
import {
  pairedMeanGames,
  pairedSuccessGames,
  pairedSuccessPower,
  varianceComponents,
} from '../../tasks/sample-size.ts';

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
    expect(varianceComponents([0, 2, 4, 6], ['a', 'a', 'b', 'b'])).toEqual({
      clusters: 2,
      perCluster: 2,
      within: 2,
      between: 7,
    });
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
