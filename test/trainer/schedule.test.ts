// Micro-batches of a training update: at most `microBatch` items, cut earlier at the attention-memory cap; and a
// phase's number of updates, from its epochs or fixed.
import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import type { Decoder } from '../../trainer/model/decoder.ts';
import { trainConfig } from '../../trainer/presets.ts';
import { microBatches, minibatchPhase } from '../../trainer/schedule.ts';

const pairs = (tokens: number[]) => tokens.map((t, i) => ({ id: i, tokens: t }));
const shape = (p: { tokens: number }) => ({ rows: 2, tokens: p.tokens });
const ids = (m: { id: number }[][]) => m.map((x) => x.map((p) => p.id));

describe('microBatches', () => {
  it('short items share micro-batches of microBatch items, in order', () => {
    const m = microBatches(
      pairs([100, 200, 300, 400, 500, 600, 700, 700]),
      { microBatch: 4, microBatchCells: 4 * 1024 * 1024 },
      shape,
    );
    expect(ids(m)).toEqual([
      [0, 1, 2, 3],
      [4, 5, 6, 7],
    ]);
  });

  it('cuts where rows x longest^2 would pass the cap; an item over it alone gets its own', () => {
    // Cap 4 x 1024^2: two pairs (4 rows) of 1,024 tokens fit, a third does not; a 2,000-token pair alone is over.
    const m = microBatches(
      pairs([1024, 1024, 1024, 300, 2000, 100]),
      { microBatch: 4, microBatchCells: 4 * 1024 * 1024 },
      shape,
    );
    expect(ids(m)).toEqual([[0, 1], [2, 3], [4], [5]]);
    // The same items under a cap that holds them all split only by count.
    expect(
      ids(microBatches(pairs([1024, 1024, 1024, 300, 2000, 100]), { microBatch: 4, microBatchCells: 1e9 }, shape)),
    ).toEqual([
      [0, 1, 2, 3],
      [4, 5],
    ]);
  });

  it('a configuration stored before the cap existed gets the default cap (two rows of 1,024 tokens)', () => {
    const m = microBatches(
      pairs([1024, 1024, 700, 700]),
      { microBatch: 4 } as { microBatch: number; microBatchCells: number },
      shape,
    );
    expect(ids(m)).toEqual([[0], [1], [2, 3]]);
  });
});

describe('minibatchPhase with a fixed number of updates (TrainConfig.policyUpdates)', () => {
  const phaseOf = (updates: number | null, items: number[], epochs: number) => {
    const w = tf.variable(tf.scalar(1), true, `policy-updates-w-${Math.random()}`);
    const model = { namedTrainableVariables: () => new Map([['w', w]]) } as unknown as Decoder;
    const c = trainConfig('cpu-small', { batchSize: 2, microBatch: 2, rehearsal: null, seed: 3 });
    const seen: number[][] = [];
    const phase = minibatchPhase({
      name: 'fixed',
      model,
      items,
      epochs,
      updates,
      peakLr: 1e-2,
      config: c,
      shape: () => ({ rows: 1, tokens: 1 }),
      microStep: (micro) => {
        seen.push(micro);
        return { loss: tf.mul(tf.square(w), micro.length) as tf.Scalar };
      },
    });
    return { phase, seen, w };
  };

  it('repeats passes to reach the updates asked for, cuts them when fewer are asked, and uses the epochs when none are', async () => {
    const items = [1, 2, 3, 4, 5];
    const more = phaseOf(7, items, 1);
    expect(more.phase.totalSteps).toBe(7);
    for (let s = 0; s < 7; s++) await more.phase.step(s);
    // 7 updates of 2 items over passes of 3 batches: every item seen at least twice.
    for (const i of items) expect(more.seen.flat().filter((x) => x === i).length).toBeGreaterThanOrEqual(2);
    expect(phaseOf(2, items, 4).phase.totalSteps).toBe(2);
    expect(phaseOf(null, items, 2).phase.totalSteps).toBe(6);
    for (const p of [more]) {
      p.phase.dispose();
      p.w.dispose();
    }
  });
});
