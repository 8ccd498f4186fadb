// A small world that exercises every rule of the exports: consented, never-consented, withdrawn and deleted
// participants, a simulated collaborator, two policy versions, backend and frontend tasks in both splits,
// flagged and resolved sessions, ratings by a withdrawn rater, and two sessions started at the same instant
// (keyset paging must not lose either). Inserted through Prisma into a real database.
import type { PrismaClient } from '../../../prisma/generated/client.ts';

export const IDS = {
  alice: '111111111111111111',
  bob: '222222222222222222',
  carol: '333333333333333333', // never consented
  dave: '444444444444444444', // withdrew
  erin: '555555555555555555', // asked for deletion
  mod: '666666666666666666',
  sim: 'sim:rule-based',
};

/** Strings that only unconsented, withdrawn or deleted people's sessions contain. */
export const SECRETS = ['CAROL-SECRET', 'DAVE-SECRET', 'ERIN-SECRET', 'DAVE-RATING-COMMENT'];

const day = (d: number, h = 12) => new Date(Date.UTC(2026, 0, d, h, 0, 0));

export interface Seeded {
  sessions: Record<string, string>;
  tasks: Record<string, { id: string; description: string; reference: string; testCases: string[] | null }>;
}

export async function seedExportWorld(prisma: PrismaClient): Promise<Seeded> {
  const consented = { consentGivenAt: day(1, 0) };
  const p = async (key: keyof typeof IDS, extra: Record<string, unknown> = {}) =>
    (await prisma.participant.create({ data: { discordUserId: IDS[key], displayName: `${key}-DISPLAY`, ...extra } }))
      .id;
  const alice = await p('alice', consented);
  const bob = await p('bob', consented);
  const carol = await p('carol');
  const dave = await p('dave', { ...consented, consentWithdrawnAt: day(9) });
  const erin = await p('erin', { ...consented, deletedAt: day(9) });
  const mod = await p('mod', { ...consented, role: 'moderator' });
  const sim = await p('sim', { role: 'simulated' });

  const task = async (key: string, kind: 'backend' | 'frontend', split: 'train' | 'test') => {
    const description = `Task ${key}: please build the thing. The signature of the function is: def f${key}(x)`;
    const reference =
      kind === 'backend' ? `def f${key}(x):\n    return x + 1\n` : `<html><body><h1>${key}</h1></body></html>`;
    const testCases = kind === 'backend' ? [`f${key}(1)`, `f${key}(2)`, `f${key}(3)`] : null;
    const t = await prisma.task.create({
      data: {
        kind,
        source: 'builtin',
        externalId: key,
        contentHash: `hash-${key}`,
        description,
        hiddenReference: reference,
        testCases: testCases ?? undefined,
        split,
      },
    });
    return { id: t.id, description, reference, testCases };
  };
  const t1 = await task('T1', 'backend', 'train');
  const t2 = await task('T2', 'backend', 'test');
  const t3 = await task('T3', 'frontend', 'train');

  const starter = await prisma.policyVersion.create({
    data: {
      name: 'starter',
      algorithm: 'starter',
      checkpointPath: '/ck/starter',
      checkpointSha256: 'a'.repeat(64),
      createdAt: day(1, 0),
      status: 'deployed',
    },
  });
  const sweet = await prisma.policyVersion.create({
    data: {
      name: 'sweet-0001',
      algorithm: 'sweet',
      checkpointPath: '/ck/s1',
      checkpointSha256: 'b'.repeat(64),
      createdAt: day(2, 0),
      parentId: starter.id,
    },
  });

  interface S {
    participant: string;
    task: { id: string };
    policy?: string;
    start: Date;
    status?: 'answered' | 'abandoned' | 'expired' | 'active';
    simulated?: boolean;
    reward?: number | null;
    evaluation?: { score: number; success: boolean; testsPassed?: number; testsTotal?: number; metric?: string };
    turns: { role: 'agent' | 'human' | 'system'; content: string; rawOutput?: string; latencyMs?: number }[];
    ratings?: { rater: string; value: number; comment?: string }[];
    flags?: { resolved: boolean; reason: string }[];
  }
  const session = async (s: S) => {
    const created = await prisma.session.create({
      data: {
        taskId: s.task.id,
        participantId: s.participant,
        policyVersionId: s.policy ?? null,
        channel: s.simulated ? 'simulated' : 'discord',
        simulated: s.simulated ?? false,
        guildId: '999999999999999999',
        threadId: `thread-${Math.random().toString(36).slice(2)}`,
        status: s.status ?? 'answered',
        turnCount: s.turns.filter((t) => t.role === 'agent').length,
        answer: s.status === 'abandoned' ? null : 'def f(x): return x + 1',
        reward: s.reward === undefined ? null : s.reward,
        startedAt: s.start,
        lastActivityAt: s.start,
        endedAt: new Date(s.start.getTime() + 600_000),
        endReason: s.status === 'abandoned' ? 'left' : 'answered',
      },
    });
    await prisma.turn.createMany({
      data: s.turns.map((t, i) => ({
        sessionId: created.id,
        index: i,
        role: t.role,
        content: t.content,
        rawOutput: t.rawOutput ?? null,
        latencyMs: t.latencyMs ?? null,
        promptTokens: t.role === 'agent' ? 100 + i : null,
        completionTokens: t.role === 'agent' ? 10 + i : null,
        createdAt: new Date(s.start.getTime() + (i + 1) * 30_000),
        externalMessageId: `msg-${created.id}-${i}`,
      })),
    });
    if (s.evaluation) {
      await prisma.evaluation.create({
        data: { sessionId: created.id, ...s.evaluation, detail: { note: 'fixture' }, evaluatorVersion: 'test-1' },
      });
    }
    for (const r of s.ratings ?? []) {
      await prisma.rating.create({
        data: {
          sessionId: created.id,
          raterId: r.rater,
          value: r.value,
          comment: r.comment ?? null,
          createdAt: new Date(s.start.getTime() + 700_000),
        },
      });
    }
    for (const f of s.flags ?? []) {
      await prisma.moderationFlag.create({
        data: { sessionId: created.id, flaggedById: mod, reason: f.reason, resolvedAt: f.resolved ? day(20) : null },
      });
    }
    return created.id;
  };

  const dialogue = (who: string) => [
    {
      role: 'agent' as const,
      content: 'What should f return for negative x?',
      rawOutput: 'THINKING... What should f return for negative x?',
      latencyMs: 1200,
    },
    { role: 'human' as const, content: `${who}: add one, always.` },
    { role: 'system' as const, content: 'Reminder: 8 turns left.' },
    { role: 'agent' as const, content: 'I WANT TO ANSWER: def f(x): return x + 1', latencyMs: 900 },
  ];

  const sessions: Record<string, string> = {};
  sessions.S1 = await session({
    participant: alice,
    task: t1,
    policy: starter.id,
    start: day(1),
    reward: 1,
    evaluation: { score: 1, success: true, testsPassed: 3, testsTotal: 3 },
    turns: dialogue('alice'),
    ratings: [
      { rater: alice, value: 5, comment: 'great helper' },
      { rater: dave, value: 1, comment: 'DAVE-RATING-COMMENT' },
      { rater: bob, value: 4 },
    ],
  });
  // Same start instant as S1: keyset paging over (startedAt, id) must return both.
  sessions.S10 = await session({
    participant: bob,
    task: t1,
    policy: sweet.id,
    start: day(1),
    reward: null,
    turns: dialogue('bob'),
    flags: [{ resolved: true, reason: 'checked, fine' }],
  });
  sessions.S2 = await session({
    participant: bob,
    task: t2,
    policy: sweet.id,
    start: day(2),
    reward: 0.5,
    evaluation: { score: 0.5, success: false, testsPassed: 1, testsTotal: 2 },
    turns: dialogue('bob'),
    ratings: [{ rater: bob, value: 2 }],
  });
  sessions.S3 = await session({
    participant: alice,
    task: t3,
    policy: sweet.id,
    start: day(3),
    reward: 0.8,
    evaluation: { score: 0.8, success: false, metric: 'pixel-ssim' },
    turns: dialogue('alice'),
  });
  sessions.S4 = await session({
    participant: bob,
    task: t1,
    policy: starter.id,
    start: day(4),
    status: 'abandoned',
    turns: dialogue('bob').slice(0, 2),
  });
  sessions.S5 = await session({
    participant: carol,
    task: t1,
    policy: starter.id,
    start: day(5),
    reward: 1,
    evaluation: { score: 1, success: true },
    turns: dialogue('CAROL-SECRET'),
  });
  sessions.S6 = await session({
    participant: dave,
    task: t1,
    policy: starter.id,
    start: day(5, 13),
    reward: 1,
    evaluation: { score: 1, success: true },
    turns: dialogue('DAVE-SECRET'),
  });
  sessions.S7 = await session({
    participant: erin,
    task: t1,
    policy: starter.id,
    start: day(5, 14),
    reward: 1,
    evaluation: { score: 1, success: true },
    turns: dialogue('ERIN-SECRET'),
  });
  sessions.S8 = await session({
    participant: sim,
    task: t1,
    policy: starter.id,
    start: day(6),
    simulated: true,
    reward: 0.2,
    evaluation: { score: 0.2, success: false, testsPassed: 0, testsTotal: 3 },
    turns: dialogue('sim'),
  });
  sessions.S9 = await session({
    participant: alice,
    task: t2,
    policy: sweet.id,
    start: day(7),
    reward: 0.3,
    evaluation: { score: 0.3, success: false },
    turns: dialogue('alice'),
    flags: [{ resolved: false, reason: 'rude language' }],
  });
  return { sessions, tasks: { T1: t1, T2: t2, T3: t3 } };
}
