// bot/session/session-cache.ts: a session kept in memory is written through (turns, fields, a turn shown), and a
// session read from the database is never kept over a write that happened while it was being read.
import { describe, expect, it } from 'vitest';
import { SessionCache } from '../../../bot/session/session-cache.ts';
import type { SessionWithTurns } from '../../../bot/session/context.ts';
import type { Turn } from '../../../prisma/generated/client.ts';

const session = (id: string, turns: Partial<Turn>[] = []) =>
  ({ id, status: 'active', turnCount: 0, turns }) as unknown as SessionWithTurns;
const turn = (id: string, role: 'agent' | 'human') => ({ id, role, externalMessageId: null }) as unknown as Turn;

describe('the sessions kept in memory', () => {
  it('apply what is written: turns (agent turns counted), fields, a turn shown, an evaluation; a copy each time', () => {
    const c = new SessionCache();
    c.set(session('s1'));
    const before = c.get('s1')!;
    c.appendTurn('s1', turn('t1', 'agent'), {});
    c.turnShown('t1', 'm1');
    c.appendTurn('s1', turn('t2', 'human'), {});
    c.appendTurn('s1', turn('t3', 'agent'), { status: 'answered', answer: 'x' });
    c.evaluated('s1', { score: 1, success: true, detail: {}, evaluatorVersion: 'v' } as never);
    const s = c.get('s1')!;
    expect(s.turns.map((t) => [t.id, t.externalMessageId])).toEqual([
      ['t1', 'm1'],
      ['t2', null],
      ['t3', null],
    ]);
    expect([s.turnCount, s.status, s.answer]).toEqual([2, 'answered', 'x']);
    expect(c.outcome('s1')?.score).toBe(1);
    expect(c.answeredHere('s1')?.id).toBe('s1');
    expect(before.turns).toEqual([]);
    c.patch('s1', { resultShownAt: new Date(0) });
    expect(c.get('s1')!.resultShownAt).toEqual(new Date(0));
    c.forget('s1');
    expect(c.get('s1')).toBeUndefined();
    expect(c.outcome('s1')).toBeUndefined();
  });

  it('keeps a read only when nothing was written since it began (a write to a session not kept counts too)', () => {
    const c = new SessionCache();
    const at = c.readAt();
    c.appendTurn('s1', turn('t9', 'human'), {}); // s1 is not kept: the write is not applied, but it happened
    expect(c.keepRead(session('s1'), at).id).toBe('s1');
    expect(c.get('s1')).toBeUndefined();
    const again = c.readAt();
    expect(c.keepRead(session('s1', [turn('t9', 'human')]), again).turns).toHaveLength(1);
    expect(c.get('s1')?.turns).toHaveLength(1);
    // Read answered, not answered here: its evaluation may exist already.
    c.patch('s1', { status: 'answered' });
    expect(c.answeredHere('s1')).toBeUndefined();
  });
});
