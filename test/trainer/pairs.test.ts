import { describe, expect, it } from 'vitest';
import { rewardPairCount, rewardPairs, topBottomPairs, widestGaps } from '../../trainer/pairs.ts';
import { sessionReward as blendedReward } from '../../prisma/evaluation-store.ts';

describe('reward blending', () => {
  it('uses the score alone by default and blends the rating when asked', () => {
    expect(blendedReward(0.6, 5, 0)).toBe(0.6);
    expect(blendedReward(0.6, null, 0.5)).toBe(0.6);
    expect(blendedReward(0.6, 5, 0.5)).toBeCloseTo(0.8, 10);
    expect(blendedReward(0.0, 3, 0.25)).toBeCloseTo(0.125, 10);
    expect(() => blendedReward(0.5, 9, 0.5)).toThrow(/rating/);
  });
});

describe('trajectory preference pairs', () => {
  const t = (id: string, groupId: string, reward: number) => ({ id, groupId, reward });
  it('pairs only within a task and only strictly better with worse', () => {
    const pairs = rewardPairs([
      t('a', 'x', 1),
      t('b', 'x', 0.5),
      t('c', 'x', 0.5),
      t('d', 'y', 1),
      t('e', 'z', 0.2),
      t('f', 'z', 0.1),
    ]);
    const names = pairs.map((p) => p.chosen.id + '>' + p.rejected.id).sort();
    expect(names).toEqual(['a>b', 'a>c', 'e>f']);
  });
  it('pairs the best trajectory of a task against each worse one, as the official code does (not every ordered pair)', () => {
    const pairs = rewardPairs([t('a', 'x', 1), t('b', 'x', 0.5), t('c', 'x', 0)]);
    // b > c is a valid preference too, but the official implementation only uses the best as chosen.
    expect(pairs.map((p) => p.chosen.id + '>' + p.rejected.id)).toEqual(['a>c', 'a>b']);
  });
  it('orders by content keys, never by ids or input order, so two databases give the same pairs', () => {
    const k = (id: string, groupId: string, reward: number, key: string) => ({ id, groupId, reward, key });
    const one = [
      k('id-9', 'g2', 1, 'k1'),
      k('id-1', 'g2', 1, 'k0'),
      k('id-5', 'g1', 0.2, 'k3'),
      k('id-2', 'g1', 0, 'k2'),
      k('id-3', 'g2', 0, 'k5'),
    ];
    const other = [...one].reverse().map((x, i) => ({ ...x, id: `other-${i}` }));
    const names = (ps: ReturnType<typeof rewardPairs<ReturnType<typeof k>>>) =>
      ps.map((p) => `${p.chosen.key}>${p.rejected.key}`);
    // Equal best rewards: the first by key (k0) is chosen; groups in key order (g1 before g2).
    expect(names(rewardPairs(one))).toEqual(['k3>k2', 'k0>k5']);
    expect(names(rewardPairs(other))).toEqual(names(rewardPairs(one)));
  });
  it('keeps the largest gaps when capped', () => {
    const pairs = rewardPairs([t('a', 'x', 1), t('b', 'x', 0.9), t('c', 'x', 0)], 1);
    expect(pairs.map((p) => p.chosen.id + '>' + p.rejected.id)).toEqual(['a>c']);
  });
  it('counts from rewards counted by group exactly the pairs rewardPairs forms (rewardPairCount)', () => {
    // Seeded groups with ties at the top and below, single items, empty counts and negative rewards.
    let seed = 5;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let round = 0; round < 50; round++) {
      const counts: { groupId: string; reward: number; n: number }[] = [];
      const groups = 1 + Math.floor(rnd() * 6);
      for (let g = 0; g < groups; g++) {
        for (const reward of [1, 0.5, 0, -0.25].filter(() => rnd() < 0.6))
          counts.push({ groupId: `g${g}`, reward, n: Math.floor(rnd() * 4) });
      }
      const items = counts.flatMap((c) =>
        Array.from({ length: c.n }, (_, i) => t(`${c.groupId}/${c.reward}/${i}`, c.groupId, c.reward)),
      );
      expect(rewardPairCount(counts)).toBe(rewardPairs(items).length);
    }
    expect(
      rewardPairCount([
        { groupId: 'x', reward: 1, n: 0 },
        { groupId: 'x', reward: 0.5, n: 3 },
      ]),
    ).toBe(0);
    expect(
      rewardPairCount([
        { groupId: 'x', reward: 1, n: 2 },
        { groupId: 'x', reward: 0.5, n: 3 },
        { groupId: 'y', reward: 0, n: 4 },
      ]),
    ).toBe(3);
  });
});

describe('actor candidate pairs (top half vs bottom half)', () => {
  it('always pairs a top-half candidate with a bottom-half one', () => {
    let s = 1;
    const random = () => (s = (s * 16807) % 2147483647) / 2147483647;
    const candidates = Array.from({ length: 16 }, (_, i) => ({ i, score: i / 10 }));
    const pairs = topBottomPairs(candidates, (c) => c.score, 4, random);
    expect(pairs).toHaveLength(4);
    for (const p of pairs) {
      expect(p.chosen.i).toBeGreaterThanOrEqual(8);
      expect(p.rejected.i).toBeLessThan(8);
    }
  });
  it('gives nothing for fewer than two candidates and skips ties', () => {
    expect(topBottomPairs([{ s: 1 }], (c) => c.s, 4, Math.random)).toEqual([]);
    expect(topBottomPairs([{ s: 1 }, { s: 1 }], (c) => c.s, 4, Math.random)).toEqual([]);
  });
});

describe('the actor pairs the critic is surest of (pairGapQuantile)', () => {
  const gaps = [0.1, 0.5, 0.3, 0.9, 0.3, 0.7].map((gap, i) => ({ i, gap }));
  it('keeps every pair at 0 and the widest gaps above', () => {
    expect(widestGaps(gaps, (p) => p.gap, 0)).toEqual(gaps);
    // Sorted gaps 0.1 0.3 0.3 0.5 0.7 0.9: the median is 0.4, so 0.5, 0.9 and 0.7 stay, in their order.
    expect(widestGaps(gaps, (p) => p.gap, 0.5).map((p) => p.i)).toEqual([1, 3, 5]);
  });
  it('keeps ties at the threshold together', () => {
    // The 0.25 quantile of those gaps is 0.3 (linear interpolation): both 0.3s stay.
    expect(widestGaps(gaps, (p) => p.gap, 0.25).map((p) => p.i)).toEqual([1, 2, 3, 4, 5]);
  });
});
