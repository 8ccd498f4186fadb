// bot/session/context.ts: a session handed over between two holders of its lock (the person's reply stored, then
// the agent's step that answers it) reaches the next holder only; any other holder in between drops it, so a step
// never works from a session that this process changed after it was handed over.
import { describe, expect, it } from 'vitest';
import { EngineContext, type SessionWithTurns } from '../../../bot/session/context.ts';
import type { EngineDeps, EngineOptions } from '../../../bot/session/types.ts';

const ctx = () => new EngineContext({} as EngineDeps, { maxTurns: 3 } as EngineOptions);
const session = (id: string) => ({ id, turns: [] }) as unknown as SessionWithTurns;

describe('the session handed over under its lock', () => {
  it('reaches the next holder of the lock, once', async () => {
    const c = ctx();
    await c.locked('s1', async (h) => {
      expect(h).toBeUndefined();
      c.handOver(session('s1'));
    });
    expect(await c.locked('s1', async (h) => h?.id)).toBe('s1');
    expect(await c.locked('s1', async (h) => h)).toBeUndefined();
  });

  it('goes to whichever holder comes next (a /task stop queued behind the reply), so the step after it reads the session again; per session', async () => {
    const c = ctx();
    const seen: (string | undefined)[] = [];
    const reply = c.locked('s1', async () => c.handOver(session('s1')));
    const stop = c.locked('s1', async (h) => void seen.push(h?.id));
    await Promise.all([reply, stop]);
    seen.push(await c.locked('s1', async (h) => h?.id));
    expect(seen).toEqual(['s1', undefined]);
    await c.locked('s2', async () => c.handOver(session('s2')));
    expect(await c.locked('s3', async (h) => h)).toBeUndefined();
    expect(await c.locked('s2', async (h) => h?.id)).toBe('s2');
  });
});
