// prisma/session-store.ts's turn appends, evaluations and ratings on Postgres: each is one statement now (the next index read in it), and
// must write what the transaction it replaced wrote: the turn at the next index with every field, the session's
// counters, its answer and active time; a redelivered external id refused by its unique index (as the engine
// expects: UniqueViolationError on externalMessageId); a missing session reported as Prisma's P2025. The reward
// written with an evaluation or a rating (one statement each) is sessionReward's, to the last bit. On Postgres
// and on the embedded PGlite (their adapters type a raw statement's values and errors each their own way).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { openDatabase } from '../../prisma/db.ts';
import { migrate } from '../../prisma/migrate.ts';
import { builtinTasks } from '../../tasks/library.ts';
import { importTasks } from '../../prisma/task-store.ts';
import { appendAgentTurn, appendHumanTurn, createSession } from '../../prisma/session-store.ts';
import { recordEvaluation, sessionReward } from '../../prisma/evaluation-store.ts';
import { recordRating, rateOwnSession } from '../../prisma/rating-store.ts';
import { toDatabaseError, UniqueViolationError } from '../../prisma/errors.ts';
import { recordActiveTimes } from '../../prisma/active-time-store.ts';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import type { EvaluationOutcome } from '../../tasks/scorer.ts';

async function pglite(): Promise<Pick<TestDatabase, 'prisma' | 'drop'>> {
  const parent = mkdtempSync(join(tmpdir(), 'sweetloop-turns-'));
  const db = await openDatabase({ pgliteDir: join(parent, 'pglite') });
  await migrate(db);
  return { prisma: db.prisma, drop: async () => (await db.close(), rmSync(parent, { recursive: true, force: true })) };
}

describe.each([
  ['Postgres', createTestDatabase],
  ['PGlite', pglite],
] as const)('turn, evaluation and rating writes on %s', (_, open) => {
  let t: { prisma: PrismaClient; drop: () => Promise<void> };
  let taskId: string;

  beforeAll(async () => {
    t = await open();
    await importTasks(t.prisma, builtinTasks({ kind: 'backend', split: 'train' }).slice(0, 1));
    taskId = (await t.prisma.task.findFirstOrThrow()).id;
  }, 180_000);
  afterAll(() => t?.drop());

  async function newSession(discordUserId: string) {
    const p = await t.prisma.participant.upsert({ where: { discordUserId }, create: { discordUserId }, update: {} });
    return createSession(t.prisma, {
      taskId,
      participantId: p.id,
      policyVersionId: null,
      channel: 'discord',
      simulated: false,
    });
  }

  it('store each turn at the next index with its fields, and the session counters, answer and active time', async () => {
    const s = await newSession('771000000000000001');
    const at1 = new Date('2027-01-02T03:04:05.678Z');
    const provenance = { engine: 'endpoint', model: 'm\u0000x', seed: 7, logprobs: [{ token: 'a', logprob: -0.5 }] };
    const a1 = await appendAgentTurn(
      t.prisma,
      s.id,
      {
        content: 'q\u0000?',
        rawOutput: 'raw',
        latencyMs: 12,
        promptTokens: 3,
        completionTokens: 4,
        provenance: provenance as never,
        externalMessageId: 'm1',
      },
      undefined,
      at1,
    );
    const h1 = await appendHumanTurn(
      t.prisma,
      s.id,
      { content: 'hi', externalMessageId: 'm2' },
      new Date(at1.getTime() + 1000),
    );
    const a2 = await appendAgentTurn(
      t.prisma,
      s.id,
      { content: 'ANSWER', rawOutput: 'ANSWER' },
      { answer: 'def f(): pass', endReason: 'answered' },
      new Date(at1.getTime() + 2000),
    );
    expect([a1.index, h1.index, a2.index]).toEqual([0, 1, 2]);
    const rows = await t.prisma.turn.findMany({ where: { sessionId: s.id }, orderBy: { index: 'asc' } });
    // What the appends return is the stored row, typed as Prisma reads it.
    expect([a1, h1, a2]).toEqual(rows);
    expect(rows[0]).toMatchObject({
      role: 'agent',
      content: 'q\uFFFD?',
      rawOutput: 'raw',
      latencyMs: 12,
      promptTokens: 3,
      completionTokens: 4,
      externalMessageId: 'm1',
    });
    expect(rows[0]!.provenance).toEqual({ ...provenance, model: 'm\uFFFDx' });
    expect(rows[1]).toMatchObject({
      role: 'human',
      content: 'hi',
      externalMessageId: 'm2',
      rawOutput: null,
      provenance: null,
      latencyMs: null,
    });
    expect(rows[2]!.provenance).toBeNull();
    expect(rows[0]!.createdAt).toBeInstanceOf(Date);
    expect(Math.abs(rows[0]!.createdAt.getTime() - Date.now())).toBeLessThan(60_000);
    const after = await t.prisma.session.findUniqueOrThrow({ where: { id: s.id } });
    expect(after).toMatchObject({
      turnCount: 2,
      status: 'answered',
      answer: 'def f(): pass',
      endReason: 'answered',
      lastActivityAt: new Date(at1.getTime() + 2000),
      endedAt: new Date(at1.getTime() + 2000),
    });
    expect(after.activeMs).not.toBeNull();
    // The answer wrote the active time the fill computes from the stored moments (prisma/active-time-store.ts).
    await t.prisma.session.update({ where: { id: s.id }, data: { activeMs: null } });
    expect(await recordActiveTimes(t.prisma, [s.id])).toBe(1);
    expect((await t.prisma.session.findUniqueOrThrow({ where: { id: s.id } })).activeMs).toBe(after.activeMs);
  });

  it('refuse a redelivered external id with UniqueViolationError on externalMessageId, and a missing session as P2025', async () => {
    const s = await newSession('771000000000000002');
    await appendAgentTurn(t.prisma, s.id, { content: 'q?', rawOutput: 'q?' });
    await appendHumanTurn(t.prisma, s.id, { content: 'hi', externalMessageId: 'dup-1' });
    const err = toDatabaseError(
      await appendHumanTurn(t.prisma, s.id, { content: 'hi', externalMessageId: 'dup-1' }).catch((e: unknown) => e),
    );
    expect(err).toBeInstanceOf(UniqueViolationError);
    expect((err as UniqueViolationError).fields).toContain('externalMessageId');
    expect(await t.prisma.turn.count({ where: { sessionId: s.id } })).toBe(2);
    const gone = '00000000-0000-4000-8000-000000000000';
    await expect(appendHumanTurn(t.prisma, gone, { content: 'x' })).rejects.toMatchObject({ code: 'P2025' });
    await expect(appendAgentTurn(t.prisma, gone, { content: 'x', rawOutput: 'x' })).rejects.toMatchObject({
      code: 'P2025',
    });
    await expect(
      appendAgentTurn(t.prisma, gone, { content: 'x', rawOutput: 'x' }, { answer: 'a', endReason: 'answered' }),
    ).rejects.toMatchObject({ code: 'P2025' });
  });

  it('write the reward sessionReward gives, whichever of the evaluation and the rating comes first, and refuse a second evaluation', async () => {
    const reward = async (id: string) => (await t.prisma.session.findUniqueOrThrow({ where: { id } })).reward;
    const outcome = (score: number) =>
      ({
        score,
        success: score === 1,
        testsPassed: 7,
        testsTotal: 10,
        detail: { tests: [{ passed: true }] },
        evaluatorVersion: 'v1',
      }) as EvaluationOutcome;
    const a = await newSession('771000000000000003');
    await recordEvaluation(t.prisma, a.id, outcome(0.7), 0.3);
    expect(await reward(a.id)).toBe(0.7);
    await recordRating(t.prisma, a.id, a.participantId, 4, 0.3);
    expect(await reward(a.id)).toBe(sessionReward(0.7, 4, 0.3));
    await recordRating(t.prisma, a.id, a.participantId, 2, 0.3);
    expect(await reward(a.id)).toBe(sessionReward(0.7, 2, 0.3));
    expect(await t.prisma.rating.findMany({ where: { sessionId: a.id }, select: { value: true } })).toEqual([
      { value: 2 },
    ]);
    const stored = await t.prisma.evaluation.findUniqueOrThrow({ where: { sessionId: a.id } });
    expect(stored).toMatchObject({
      score: 0.7,
      success: false,
      testsPassed: 7,
      testsTotal: 10,
      detail: { tests: [{ passed: true }] },
      metric: null,
      evaluatorVersion: 'v1',
    });
    const again = toDatabaseError(await recordEvaluation(t.prisma, a.id, outcome(1), 0.3).catch((e: unknown) => e));
    expect(again).toBeInstanceOf(UniqueViolationError);
    expect(await reward(a.id)).toBe(sessionReward(0.7, 2, 0.3));

    const b = await newSession('771000000000000004');
    await recordRating(t.prisma, b.id, b.participantId, 5, 0.1);
    expect(await reward(b.id)).toBeNull();
    await recordEvaluation(t.prisma, b.id, outcome(1 / 3), 0.1);
    expect(await reward(b.id)).toBe(sessionReward(1 / 3, 5, 0.1));
    const c = await newSession('771000000000000005');
    await recordRating(t.prisma, c.id, c.participantId, 1, 0);
    await recordEvaluation(t.prisma, c.id, outcome(0.25), 0);
    expect(await reward(c.id)).toBe(0.25);
    await expect(recordEvaluation(t.prisma, c.id, outcome(0.5), 1.5)).rejects.toThrow(RangeError);
    await expect(
      recordRating(t.prisma, '00000000-0000-4000-8000-000000000000', c.participantId, 3, 0),
    ).rejects.toMatchObject({ code: 'P2003' });
  });

  it('rate a session for its own person only, once answered, saying what it was checked against', async () => {
    const reward = async (id: string) => (await t.prisma.session.findUniqueOrThrow({ where: { id } })).reward;
    const ratings = (id: string) => t.prisma.rating.findMany({ where: { sessionId: id }, select: { value: true } });
    const d = await newSession('771000000000000006');
    expect(await rateOwnSession(t.prisma, d.id, '771000000000000006', 5, 0.5)).toEqual({
      owner: '771000000000000006',
      status: 'active',
    });
    await appendAgentTurn(t.prisma, d.id, { content: 'a', rawOutput: 'a' }, { answer: 'a', endReason: 'answered' });
    await recordEvaluation(
      t.prisma,
      d.id,
      { score: 0.5, success: false, detail: {}, evaluatorVersion: 'v1' } as EvaluationOutcome,
      0.5,
    );
    expect(await rateOwnSession(t.prisma, d.id, 'someone-else', 5, 0.5)).toEqual({
      owner: '771000000000000006',
      status: 'answered',
    });
    expect(await ratings(d.id)).toEqual([]);
    expect(await reward(d.id)).toBe(0.5);
    expect(await rateOwnSession(t.prisma, d.id, '771000000000000006', 5, 0.5)).toEqual({
      owner: '771000000000000006',
      status: 'answered',
    });
    expect(await rateOwnSession(t.prisma, d.id, '771000000000000006', 4, 0.5)).not.toBeNull();
    expect(await ratings(d.id)).toEqual([{ value: 4 }]);
    expect(await reward(d.id)).toBe(sessionReward(0.5, 4, 0.5));
    expect(await rateOwnSession(t.prisma, '00000000-0000-4000-8000-000000000000', 'x', 3, 0)).toBeNull();
  });
});
