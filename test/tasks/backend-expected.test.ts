import { describe, expect, it } from 'vitest';
import { ExpectedCache } from '../../tasks/backend-expected.ts';

describe('ExpectedCache (a task reference run, kept)', () => {
  it('computes once for callers asking at once and after, and keeps only what may be kept', async () => {
    const cache = new ExpectedCache<string>();
    let runs = 0;
    const compute = (keep: boolean) => async () => ({ value: `run ${++runs}`, keep, bytes: 10 });
    const [a, b] = await Promise.all([cache.get('k', compute(true)), cache.get('k', compute(true))]);
    expect([a, b, await cache.get('k', compute(true))]).toEqual(['run 1', 'run 1', 'run 1']);
    expect(await cache.get('timed-out', compute(false))).toBe('run 2');
    expect(await cache.get('timed-out', compute(false))).toBe('run 3');
    await expect(cache.get('broken', async () => Promise.reject(new Error('no sandbox')))).rejects.toThrow(
      'no sandbox',
    );
    expect(await cache.get('broken', compute(true))).toBe('run 4');
    expect(ExpectedCache.key(['v2', 'def f(): pass', ['f()']])).not.toBe(
      ExpectedCache.key(['v2', 'def f(): pass', ['f( )']]),
    );
  });

  it('runs the reference again after an hour, and drops the least recently used past its byte budget', async () => {
    let now = 0;
    const cache = new ExpectedCache<number>(() => now);
    let runs = 0;
    const compute = (bytes: number) => async () => ({ value: ++runs, keep: true, bytes });
    expect(await cache.get('a', compute(1))).toBe(1);
    now += 59 * 60_000;
    expect(await cache.get('a', compute(1))).toBe(1);
    now += 2 * 60_000;
    expect(await cache.get('a', compute(1))).toBe(2);
    // 64 MiB in all: five entries of 15 MiB push out the least recently used ('a', then 'p').
    for (const k of ['p', 'q', 'r', 's', 't']) await cache.get(k, compute(15 << 20));
    expect(runs).toBe(7);
    expect(await cache.get('t', compute(1))).toBe(7);
    expect(await cache.get('q', compute(1))).toBe(4);
    expect(await cache.get('p', compute(1))).toBe(8);
    // An entry over a quarter of the budget is never kept.
    expect(await cache.get('huge', compute(17 << 20))).toBe(9);
    expect(await cache.get('huge', compute(17 << 20))).toBe(10);
  });
});
