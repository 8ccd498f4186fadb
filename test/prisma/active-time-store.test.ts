// prisma/active-time-store.ts on Postgres: a session's active time is written when it ends, by every way it ends
// (answered, abandoned or expired, banned, stored whole), with tasks/study-pay.ts activeMs; sessions that ended
// before the column existed get it from the startup fill; a session still active keeps none.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../tasks/library.ts';
import { importTasks } from '../../prisma/task-store.ts';
import { appendAgentTurn, appendHumanTurn, createSession, endSession } from '../../prisma/session-store.ts';
import { storeFinishedSession } from '../../prisma/finished-session-store.ts';
import { recordActiveTimes } from '../../prisma/active-time-store.ts';
import { recordBan } from '../../prisma/moderation-store.ts';
import { activeMs, IDLE_GAP_MS } from '../../tasks/study-pay.ts';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';

const T0 = Date.UTC(2027, 2, 1, 9);
const ACTOR = { id: '889999999999999999', guildId: null };
let t: TestDatabase;
let taskId: string;

beforeAll(async () => {
  t = await createTestDatabase();
  await importTasks(t.prisma, builtinTasks({ kind: 'backend', split: 'train' }).slice(0, 1));
  taskId = (await t.prisma.task.findFirstOrThrow()).id;
}, 180_000);
afterAll(() => t?.drop());

async function session(discordUserId: string, turnsAt: number[]) {
  const p = await t.prisma.participant.upsert({ where: { discordUserId }, create: { discordUserId }, update: {} });
  const s = await createSession(t.prisma, {
    taskId,
    participantId: p.id,
    policyVersionId: null,
    channel: 'discord',
    simulated: false,
    guildId: '881111111111111111',
  });
  await t.prisma.session.update({ where: { id: s.id }, data: { startedAt: new Date(T0) } });
  for (const [i, at] of turnsAt.entries()) {
    if (i % 2) await appendHumanTurn(t.prisma, s.id, { content: 'hi' }, new Date(at));
    else await appendAgentTurn(t.prisma, s.id, { content: 'q?', rawOutput: 'q?' }, undefined, new Date(at));
  }
  // The turns' own times are what the rule reads.
  const turns = await t.prisma.turn.findMany({ where: { sessionId: s.id }, orderBy: { index: 'asc' } });
  for (const [i, turn] of turns.entries())
    await t.prisma.turn.update({ where: { id: turn.id }, data: { createdAt: new Date(turnsAt[i]!) } });
  return { id: s.id, participantId: p.id };
}

const stored = async (id: string) => (await t.prisma.session.findUniqueOrThrow({ where: { id } })).activeMs;

describe('recordActiveTimes', () => {
  it('writes the active time when a session is answered, abandoned or expired, and not while it is active', async () => {
    const gaps = [T0 + 30_000, T0 + 90_000, T0 + 90_000 + IDLE_GAP_MS + 1];
    const a = await session('880000000000000001', gaps);
    expect(await stored(a.id)).toBeNull();
    const end = T0 + 90_000 + IDLE_GAP_MS + 1 + 20_000;
    await appendAgentTurn(
      t.prisma,
      a.id,
      { content: 'answer', rawOutput: 'answer' },
      { answer: 'def f(): pass', endReason: 'answered' },
      new Date(end),
    );
    const turns = (await t.prisma.turn.findMany({ where: { sessionId: a.id } })).map((x) => x.createdAt);
    const row = await t.prisma.session.findUniqueOrThrow({ where: { id: a.id } });
    expect(row.activeMs).toBe(activeMs([row.startedAt, ...turns, row.endedAt!]));
    expect(row.activeMs).toBe(90_000 + 20_000); // the pause over the idle gap is left out

    const b = await session('880000000000000002', [T0 + 10_000]);
    expect(await endSession(t.prisma, b.id, 'expired', 'idle', new Date(T0 + 70_000))).toBe(true);
    expect(await stored(b.id)).toBe(70_000);
  });

  it('writes it for the sessions a ban ends and for a game stored whole', async () => {
    const c = await session('880000000000000003', [T0 + 5_000, T0 + 8_000]);
    const ended = await recordBan(t.prisma, ACTOR, '880000000000000003', { reason: 'spam', guildId: null });
    expect(ended).toContain(c.id);
    // The ban ends it now, long before its (future) start: that gap is over the idle gap and left out.
    expect(await stored(c.id)).toBe(8_000);

    const id = await storeFinishedSession(t.prisma, {
      taskId,
      policyVersionId: null,
      collaborator: 'rule-simulator',
      channel: 'simulated',
      turns: [
        { role: 'agent', content: 'q?' },
        { role: 'human', content: 'a' },
      ],
      answer: 'x',
      endReason: 'answered',
      evaluation: { score: 1, success: true, detail: {}, evaluatorVersion: 't' },
      startedAt: new Date(T0),
      endedAt: new Date(T0 + 4_000),
    });
    expect(await stored(id)).toBe(4_000);
  });

  it('fills the sessions that ended before the column existed, and leaves active ones alone', async () => {
    const d = await session('880000000000000004', [T0 + 1_000]);
    const e = await session('880000000000000005', [T0 + 2_000]);
    await t.prisma.session.update({
      where: { id: d.id },
      data: { status: 'abandoned', endedAt: new Date(T0 + 3_000) },
    });
    expect(await stored(d.id)).toBeNull();
    expect(await recordActiveTimes(t.prisma)).toBe(1);
    expect(await stored(d.id)).toBe(3_000);
    expect(await stored(e.id)).toBeNull();
    expect(await recordActiveTimes(t.prisma)).toBe(0);
  });
});
