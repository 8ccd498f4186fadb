// The llama.cpp engine's scheduling decisions as pure functions: which free sequence a prompt takes (prefix
// reuse without stealing another dialogue's history), and what goes into a decode.
import { describe, expect, it } from 'vitest';
import { commonPrefix, pickSequence, planBatch } from '../../../trainer/serve/llama-schedule.ts';

const SYSTEM = [1, 2, 3, 4];

describe('pickSequence', () => {
  it('continues the sequence whose last prompt this prompt extends, and keeps the common prefix', () => {
    const a = { tokens: [...SYSTEM, 10, 11, 50, 51], promptLength: 6, releasedAt: 5 };
    const b = { tokens: [...SYSTEM, 20, 21, 60], promptLength: 6, releasedAt: 1 };
    const prompt = [...SYSTEM, 10, 11, 50, 52, 70];
    expect(pickSequence([b, a], prompt)).toEqual({ index: 1, keep: 7 });
  });

  it("takes the least recently used sequence rather than another dialogue's for a shared system prompt", () => {
    const other = { tokens: [...SYSTEM, 20, 21, 60], promptLength: 6, releasedAt: 1 };
    const empty = { tokens: [], promptLength: 0, releasedAt: 0 };
    expect(pickSequence([other, empty], [...SYSTEM, 30, 31])).toEqual({ index: 1, keep: 0 });
    // With no idle sequence left, the oldest is taken and what it shares is still used.
    const newer = { ...other, releasedAt: 9 };
    expect(pickSequence([newer, other], [...SYSTEM, 30, 31])).toEqual({ index: 1, keep: 4 });
  });

  it('always evaluates the last prompt token again; none free gives null', () => {
    const s = { tokens: [...SYSTEM, 9], promptLength: 5, releasedAt: 1 };
    expect(pickSequence([s], [...SYSTEM, 9])).toEqual({ index: 0, keep: 4 });
    expect(pickSequence([], [1])).toBeNull();
    expect(commonPrefix([1, 2, 3], [1, 2, 4, 5])).toBe(2);
  });
});

describe('planBatch', () => {
  it('gives every item a token first, then whole prompts in order as far as the batch goes', () => {
    expect(planBatch([1, 300, 1, 200, 1], 512)).toEqual([1, 300, 1, 200, 1]);
    expect(planBatch([1, 300, 1, 300, 1], 512)).toEqual([1, 300, 1, 209, 1]);
    expect(planBatch([5, 5, 5], 2)).toEqual([1, 1, 0]);
    expect(planBatch([0, 3], 8)).toEqual([0, 3]);
  });
});
