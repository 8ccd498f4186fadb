// Per-person limits, counted from what is stored (real Postgres): sessions in any 24 hours, replies in any
// minute, characters per reply.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { messageLimitRefusal, sessionLimitRefusal } from '../../bot/limits.ts';
import { builtinTasks } from '../../tasks/library.ts';
import { importTasks } from '../../prisma/task-store.ts';

describe('limits', () => {
  let t: TestDatabase;
  let participantId = '';
  let sessionId = '';
  const now = new Date();
  beforeAll(async () => {
    t = await createTestDatabase();
    await importTasks(t.prisma, builtinTasks({ kind: 'backend' }).slice(0, 1));
    const task = await t.prisma.task.findFirstOrThrow();
    participantId = (
      await t.prisma.participant.create({ data: { discordUserId: '111111111111111111', consentGivenAt: now } })
    ).id;
    // One session 25 hours ago (outside the window), two within it.
    for (const hoursAgo of [25, 5, 1]) {
      const s = await t.prisma.session.create({
        data: {
          taskId: task.id,
          participantId,
          channel: 'discord',
          startedAt: new Date(now.getTime() - hoursAgo * 3600_000),
        },
      });
      sessionId = s.id;
    }
    // Two replies in the last minute, one two minutes ago.
    for (const [i, secondsAgo] of [120, 30, 10].entries()) {
      await t.prisma.turn.create({
        data: {
          sessionId,
          index: i,
          role: 'human',
          content: `reply ${i}`,
          createdAt: new Date(now.getTime() - secondsAgo * 1000),
        },
      });
    }
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('counts sessions started in the last 24 hours and says when the next may start', async () => {
    expect(
      await sessionLimitRefusal(
        t.prisma,
        participantId,
        { sessionsPerDay: 3, messagesPerMinute: 10, messageChars: 100 },
        now,
      ),
    ).toBeNull();
    const refusal = await sessionLimitRefusal(
      t.prisma,
      participantId,
      { sessionsPerDay: 2, messagesPerMinute: 10, messageChars: 100 },
      now,
    );
    expect(refusal).toMatch(/started 2 sessions in the last 24 hours/);
    // The oldest of the two in the window started 5 hours ago: a slot frees 19 hours from now.
    expect(refusal).toContain(
      new Date(now.getTime() - 5 * 3600_000 + 24 * 3600_000).toISOString().slice(0, 13).replace('T', ' '),
    );
  });

  it('counts replies stored in the last minute, and refuses an over-long reply before counting', async () => {
    const limits = { sessionsPerDay: 10, messagesPerMinute: 3, messageChars: 100 };
    expect(await messageLimitRefusal(t.prisma, participantId, 20, limits, now)).toBeNull();
    expect(await messageLimitRefusal(t.prisma, participantId, 20, { ...limits, messagesPerMinute: 2 }, now)).toMatch(
      /sent 2 messages in the last minute/,
    );
    expect(await messageLimitRefusal(t.prisma, participantId, 101, limits, now)).toMatch(
      /101 characters long; the limit is 100/,
    );
  });
});
