// Micro-batches of a training update: at most `microBatch` items, cut earlier at the attention-memory cap.
import { describe, expect, it } from 'vitest';
import { microBatches } from '../../trainer/schedule.ts';

const pairs = (tokens: number[]) => tokens.map((t, i) => ({ id: i, tokens: t }));
const shape = (p: { tokens: number }) => ({ rows: 2, tokens: p.tokens });
const ids = (m: { id: number }[][]) => m.map((x) => x.map((p) => p.id));

describe('microBatches', () => {
  it('short items share micro-batches of microBatch items, in order', () => {
    const m = microBatches(pairs([100, 200, 300, 400, 500, 600, 700, 700]), { microBatch: 4, microBatchCells: 4 * 1024 * 1024 }, shape);
    expect(ids(m)).toEqual([[0, 1, 2, 3], [4, 5, 6, 7]]);
  });

  it('cuts where rows x longest^2 would pass the cap; an item over it alone gets its own', () => {
    // Cap 4 x 1024^2: two pairs (4 rows) of 1,024 tokens fit, a third does not; a 2,000-token pair alone is over.
    const m = microBatches(pairs([1024, 1024, 1024, 300, 2000, 100]), { microBatch: 4, microBatchCells: 4 * 1024 * 1024 }, shape);
    expect(ids(m)).toEqual([[0, 1], [2, 3], [4], [5]]);
    // The same items under a cap that holds them all split only by count.
    expect(ids(microBatches(pairs([1024, 1024, 1024, 300, 2000, 100]), { microBatch: 4, microBatchCells: 1e9 }, shape))).toEqual([[0, 1, 2, 3], [4, 5]]);
  });

  it('a configuration stored before the cap existed gets the default cap (two rows of 1,024 tokens)', () => {
    const m = microBatches(pairs([1024, 1024, 700, 700]), { microBatch: 4 } as { microBatch: number; microBatchCells: number }, shape);
    expect(ids(m)).toEqual([[0], [1], [2, 3]]);
  });
});
