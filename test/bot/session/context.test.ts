// bot/session/context.ts: one holder of a session's lock at a time, in the order they asked; sessions apart.
import { describe, expect, it } from 'vitest';
import { EngineContext } from '../../../bot/session/context.ts';
import type { EngineDeps, EngineOptions } from '../../../bot/session/types.ts';

const ctx = () => new EngineContext({} as EngineDeps, { maxTurns: 3 } as EngineOptions);
const tick = () => new Promise((r) => setTimeout(r, 5));

describe("a session's lock", () => {
  it('runs its holders one at a time, in order; another session does not wait', async () => {
    const c = ctx();
    const seen: string[] = [];
    const first = c.locked('s1', async () => {
      seen.push('s1 first in');
      await tick();
      seen.push('s1 first out');
    });
    const second = c.locked('s1', async () => void seen.push('s1 second'));
    const other = c.locked('s2', async () => void seen.push('s2'));
    await Promise.all([first, second, other]);
    expect(seen).toEqual(['s1 first in', 's2', 's1 first out', 's1 second']);
  });
});
