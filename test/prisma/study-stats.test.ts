// prisma/study-stats.ts against the reads it replaced, on Postgres and PGlite: a study's progress, its payouts and
// their total, and the people page's sessions and active time (an operator's and a moderator's) must come out as
// they did when every session was read through prisma/session-summary.ts sessionSummaries. The references below
// are the code of bot/study-progress.ts, bot/study-payouts.ts and bot/dashboard/overview.ts before the change
// (commit f62fd35), run on the same seeded database: sessions with pauses over the idle gap, one of exactly the gap,
// equal moments, no turns or no end, every status, rewards with ties, two guilds, erased pay rows.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../tasks/library.ts';
import { importTasks } from '../../prisma/task-store.ts';
import { createStudy, type StudyWithArms } from '../../prisma/study-store.ts';
import { openDatabase, type Database } from '../../prisma/db.ts';
import { migrate } from '../../prisma/migrate.ts';
import type { PrismaClient, SessionStatus } from '../../prisma/generated/client.ts';
import { sessionSummaries } from '../../prisma/session-summary.ts';
import {
  activeTimeByPerson,
  medianActiveMinutes,
  sessionTimes,
  type SessionSelector,
} from '../../prisma/study-stats.ts';
import { recordActiveTimes } from '../../prisma/active-time-store.ts';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { projectCompletion, projectionWindow, studyProgress } from '../../bot/study-progress.ts';
import { studyPayouts, studyPayTotal } from '../../bot/study-payouts.ts';
import { judgementsDigest, leaderboards, peopleOverview, preferenceJudgements } from '../../bot/dashboard/overview.ts';
import { IDLE_GAP_MS, sessionAmountCents } from '../../tasks/study-pay.ts';
import { quantileSorted } from '../../tasks/stats.ts';
import { rewardPairs } from '../../trainer/pairs.ts';
import { deployedPolicy } from '../../prisma/policy-store.ts';
import type { Viewer } from '../../bot/dashboard/access.ts';

const GUILDS = ['871111111111111111', '872222222222222222'];
const T0 = Date.UTC(2027, 0, 10, 12);
const NOW = new Date(T0 + 30 * 3600_000);
const SALT = 'study-stats-test-salt';

/** Seeded variety: deterministic, so both databases hold the same sessions. */
async function seed(prisma: PrismaClient): Promise<StudyWithArms> {
  await importTasks(prisma, builtinTasks({ kind: 'backend', split: 'train' }).slice(0, 6));
  const tasks = (await prisma.task.findMany({ orderBy: { externalId: 'asc' } })).map((t) => t.id);
  const versions: string[] = [];
  for (const name of ['arm-a', 'arm-b'])
    versions.push(
      (
        await prisma.policyVersion.create({
          data: { name, algorithm: 'external', checkpointPath: '/x', checkpointSha256: '0' },
        })
      ).id,
    );
  const study = await createStudy(
    prisma,
    'cli',
    {
      name: 'stats',
      kind: null,
      split: 'train',
      perTask: 5,
      seed: 3,
      taskIds: tasks.slice(0, 5),
      arms: [
        { policyVersionId: versions[0]!, share: 50 },
        { policyVersionId: versions[1]!, share: 50 },
      ],
      consentText: null,
      payPerSessionCents: 150,
      bonusSuccessCents: 50,
      currency: 'EUR',
      maxSessionsPerPerson: null,
      opensAt: null,
      closesAt: null,
      guildIds: [],
      channelIds: [],
    },
    { requireConsent: false },
  );
  const people: string[] = [];
  for (let i = 0; i < 6; i++)
    people.push(
      (
        await prisma.participant.create({
          data: { discordUserId: `86${i}000000000000000`, consentGivenAt: new Date(T0) },
        })
      ).id,
    );
  const statuses: SessionStatus[] = ['answered', 'answered', 'active', 'answered', 'abandoned', 'expired', 'answered'];
  // Gaps between moments (ms): under, over and exactly the idle gap, and equal moments.
  const gapSets = [
    [30_000, 45_000, 60_000],
    [20_000, IDLE_GAP_MS + 1, 10_000],
    [IDLE_GAP_MS, 1_000],
    [0, 0, 5_000],
    [],
    [7 * 60_000, 2_500, 61_000, 3],
  ];
  for (let i = 0; i < 40; i++) {
    const status = statuses[i % statuses.length]!;
    const start = T0 + i * 47 * 60_000 + (i % 3) * 7;
    const gaps = gapSets[i % gapSets.length]!;
    const moments = gaps.reduce<number[]>((acc, g) => [...acc, acc[acc.length - 1]! + g], [start]);
    const ended = status !== 'active' && i % 9 !== 4;
    const s = await prisma.session.create({
      data: {
        taskId: tasks[i % 5]!,
        participantId: people[(i * 5) % 6]!,
        policyVersionId: i % 8 === 7 ? null : versions[i % 2]!,
        channel: 'discord',
        guildId: i % 4 === 3 ? null : GUILDS[i % 2]!,
        status,
        turnCount: moments.length - 1,
        reward: status === 'answered' ? [1, 0.5, 0.5, 0, null][Math.floor(i / 5) % 5]! : null,
        studyId: i % 10 === 9 ? null : study.id,
        startedAt: new Date(start),
        lastActivityAt: new Date(moments[moments.length - 1]!),
        endedAt: ended ? new Date(moments[moments.length - 1]! + 90_000) : null,
      },
    });
    for (const [k, at] of moments.slice(1).entries())
      await prisma.turn.create({
        data: { sessionId: s.id, index: k, role: k % 2 ? 'human' : 'agent', content: 'x', createdAt: new Date(at) },
      });
    if (status === 'answered' && i % 6 !== 5)
      await prisma.evaluation.create({
        data: { sessionId: s.id, score: 0.5, success: i % 3 === 0, detail: {}, evaluatorVersion: 't' },
      });
  }
  // The people page's other columns: quality (one score not a number), an exclusion, a ban, a simulated person.
  await prisma.participantQuality.createMany({
    data: [
      { participantId: people[0]!, score: 0.25, sessions: 3, signals: { tooFast: 0.5 } },
      { participantId: people[2]!, score: NaN, sessions: 0, signals: {} },
    ],
  });
  await prisma.trainingExclusion.create({
    data: { participantId: people[1]!, excludedBy: 'test', reason: 'copy-paste', createdAt: new Date(T0) },
  });
  await prisma.participant.update({ where: { id: people[3]! }, data: { banned: true } });
  await prisma.participant.update({ where: { id: people[4]! }, data: { role: 'simulated' } });
  await prisma.erasedStudySession.createMany({
    data: [
      { studyId: study.id, participantKey: 'erased:aa', success: true, activeMs: 61_000 },
      { studyId: study.id, participantKey: 'erased:aa', success: false, activeMs: 5_000 },
    ],
  });
  return (await prisma.study.findUniqueOrThrow({
    where: { id: study.id },
    include: { arms: { include: { policyVersion: true } } },
  })) as StudyWithArms;
}

/** bot/study-progress.ts studyProgress before prisma/study-stats.ts (commit f62fd35). */
async function progressBefore(prisma: PrismaClient, study: StudyWithArms, now: Date) {
  const [tasks, sessions, first, deployed] = await Promise.all([
    prisma.studyTask.count({ where: { studyId: study.id } }),
    sessionSummaries(prisma, { studyId: study.id, status: { in: ['active', 'answered'] } }),
    prisma.session.aggregate({ where: { studyId: study.id }, _min: { startedAt: true } }),
    deployedPolicy(prisma),
  ]);
  const byTask = new Map<string, typeof sessions>();
  for (const s of sessions) byTask.set(s.taskId, [...(byTask.get(s.taskId) ?? []), s]);
  const k = study.perTask;
  let complete = 0;
  for (const list of byTask.values())
    if (k !== null && list.filter((s) => s.status === 'answered').length >= k) complete++;
  const answered = sessions.filter((s) => s.status === 'answered');
  const count = (id: string, status: string) =>
    sessions.filter((s) => s.policyVersionId === id && s.status === status).length;
  const answeredAt = answered.map((s) => s.endedAt ?? s.startedAt);
  return {
    tasks,
    complete,
    partial: byTask.size - complete,
    untouched: tasks - byTask.size,
    answered: answered.length,
    active: sessions.filter((s) => s.status === 'active').length,
    arms: study.arms.map((a) => ({
      policy: a.policyVersion.name,
      share: a.share,
      answered: count(a.policyVersionId, 'answered'),
      active: count(a.policyVersionId, 'active'),
    })),
    peopleActive: new Set(sessions.filter((s) => s.status === 'active').map((s) => s.participantId)).size,
    criticPairs: rewardPairs(
      answered.filter((s) => s.reward !== null).map((s) => ({ id: s.id, groupId: s.taskId, reward: s.reward! })),
    ).length,
    medianActiveMinutes: answered.length
      ? quantileSorted(
          answered.map((s) => s.activeMs / 60_000).sort((a, b) => a - b),
          0.5,
        )
      : null,
    // The projection then counted the answered moments in the window itself.
    projection: projectCompletion({
      remaining: k === null ? null : tasks * k - answered.length,
      answered: answeredAt.length,
      recent: answeredAt.filter((d) => d.getTime() > now.getTime() - 24 * 3600_000 && d.getTime() <= now.getTime())
        .length,
      firstStartedAt: first._min.startedAt,
      now,
    }),
    deployed: deployed?.name ?? null,
  };
}

/** bot/study-payouts.ts studyPayouts' lines before (commit f62fd35). */
async function payoutsBefore(prisma: PrismaClient, study: StudyWithArms) {
  const live = await sessionSummaries(prisma, { studyId: study.id, status: 'answered' });
  const erased = await prisma.erasedStudySession.findMany({ where: { studyId: study.id } });
  const by = new Map<
    string,
    { platformId: string; erased: boolean; sessions: number; successes: number; activeMs: number; amountCents: number }
  >();
  const add = (platformId: string, isErased: boolean, s: { success: boolean | null; activeMs: number }) => {
    const l = by.get(platformId) ?? {
      platformId,
      erased: isErased,
      sessions: 0,
      successes: 0,
      activeMs: 0,
      amountCents: 0,
    };
    l.sessions++;
    if (s.success) l.successes++;
    l.activeMs += s.activeMs;
    l.amountCents += sessionAmountCents(study, { answered: true, success: s.success });
    by.set(platformId, l);
  };
  for (const s of live) add(s.externalId, false, s);
  for (const s of erased) add(s.participantKey, true, s);
  const lines = [...by.values()].sort(
    (a, b) => Number(a.erased) - Number(b.erased) || a.platformId.localeCompare(b.platformId),
  );
  return { lines, sessions: live.length + erased.length, totalCents: lines.reduce((a, l) => a + l.amountCents, 0) };
}

/**
 * The people page's rows before (Prisma's findMany with the person's quality and exclusion, sessionSummaries over
 * the viewer's sessions), by id; the pseudonym and the order are checked by the page's tests.
 */
async function peopleBefore(prisma: PrismaClient, viewer: Viewer) {
  const people = await prisma.participant.findMany({
    where: {
      role: { not: 'simulated' },
      deletedAt: null,
      ...(viewer.role === 'moderator' ? { sessions: { some: { guildId: viewer.guildId } } } : {}),
    },
    include: { quality: true, trainingExclusion: true },
  });
  const summaries = await sessionSummaries(prisma, {
    participantId: { in: people.map((p) => p.id) },
    ...(viewer.role === 'moderator' ? { guildId: viewer.guildId } : {}),
  });
  const out = new Map(
    people.map((p) => [
      p.id,
      {
        activeMinutes: 0,
        sessions: 0,
        role: p.role as string,
        score: p.quality && Number.isFinite(p.quality.score) ? p.quality.score : null,
        signals: (p.quality?.signals ?? {}) as Record<string, number>,
        excluded: p.trainingExclusion
          ? { reason: p.trainingExclusion.reason, at: p.trainingExclusion.createdAt }
          : null,
        banned: p.banned,
      },
    ]),
  );
  for (const s of summaries) {
    const r = out.get(s.participantId)!;
    r.activeMinutes += s.activeMs / 60_000;
    r.sessions++;
  }
  return out;
}

/**
 * medianActiveMinutes and activeTimeByPerson against sessionTimes, the one-row-a-session read they replace, over
 * selectors of every kind: the median as bot/study-progress.ts computed it (quantileSorted of the sorted minutes),
 * exactly; the sums as the people page summed them. Returns how many selectors had an even count whose middle two
 * differ (the interpolating case).
 */
async function sqlAgainstRows(prisma: PrismaClient, study: StudyWithArms): Promise<number> {
  const people = (await prisma.participant.findMany({ orderBy: { discordUserId: 'asc' } })).map((p) => p.id);
  const selectors: SessionSelector[] = [
    {},
    { studyId: study.id },
    { studyId: study.id, statuses: ['answered'] },
    { statuses: ['active'] },
    { statuses: ['abandoned', 'expired'] },
    { guildId: GUILDS[0]! },
    { guildId: null },
    { participantIds: people.slice(0, 2) },
    { participantIds: people.slice(3), guildId: GUILDS[1]! },
    { studyId: study.id, statuses: ['answered'], participantIds: [people[1]!] },
    { participantIds: [] },
  ];
  let interpolated = 0;
  for (const where of selectors) {
    const rows = await sessionTimes(prisma, where);
    const sorted = rows.map((r) => r.activeMs / 60_000).sort((a, b) => a - b);
    expect(await medianActiveMinutes(prisma, where), JSON.stringify(where)).toBe(
      rows.length ? quantileSorted(sorted, 0.5) : null,
    );
    if (sorted.length % 2 === 0 && sorted.length && sorted[sorted.length / 2 - 1] !== sorted[sorted.length / 2])
      interpolated++;
    const byPerson = new Map<string, { sessions: number; activeMs: number }>();
    for (const r of rows) {
      const p = byPerson.get(r.participantId) ?? { sessions: 0, activeMs: 0 };
      p.sessions++;
      p.activeMs += r.activeMs;
      byPerson.set(r.participantId, p);
    }
    expect(await activeTimeByPerson(prisma, where), JSON.stringify(where)).toEqual(byPerson);
  }
  return interpolated;
}

const operator: Viewer = { role: 'operator', guildId: null, actor: 'test', principal: 'test' };
const moderator: Viewer = { role: 'moderator', guildId: GUILDS[1]!, actor: 'test', principal: 'test-mod' };

function checks(get: () => { prisma: PrismaClient; study: StudyWithArms }) {
  it('gives the progress the per-session reads gave (counts, arms, pairs, median active time, projection)', async () => {
    const { prisma, study } = get();
    const before = await progressBefore(prisma, study, NOW);
    const after = await studyProgress(prisma, study, NOW);
    expect({ ...after, starterOnly: undefined }).toEqual({ ...before, starterOnly: undefined });
    // The data reaches each branch: pauses left out, an active session, pairs, a task complete, a projection.
    expect(before.active).toBeGreaterThan(0);
    expect(before.complete).toBeGreaterThan(0);
    expect(before.criticPairs).toBeGreaterThan(0);
    expect(before.projection.state).toBe('projected');
    // And within the window the recent rate is used (20 h back: some answered sessions fall inside).
    const early = new Date(T0 + 20 * 3600_000);
    expect(await studyProgress(prisma, study, early)).toEqual({
      ...(await progressBefore(prisma, study, early)),
      starterOnly: after.starterOnly,
    });
    expect(projectionWindow(early).from).toEqual(new Date(early.getTime() - 24 * 3600_000));
  });

  it('gives the payouts and their total as before, erased people included', async () => {
    const { prisma, study } = get();
    const before = await payoutsBefore(prisma, study);
    const after = await studyPayouts(prisma, study);
    expect(after.lines).toEqual(before.lines);
    expect(after.totalCents).toBe(before.totalCents);
    expect(await studyPayTotal(prisma, study)).toBe(before.totalCents);
    expect(before.lines.some((l) => l.erased)).toBe(true);
    expect(before.totalCents).toBeGreaterThan(0);
  });

  it("gives each person's sessions and active time as before, for an operator and for a moderator's guild", async () => {
    const { prisma } = get();
    for (const viewer of [operator, moderator]) {
      const before = await peopleBefore(prisma, viewer);
      const after = await peopleOverview(prisma, viewer, SALT);
      expect(after.map((r) => r.id).sort()).toEqual([...before.keys()].sort());
      for (const r of after) {
        const b = before.get(r.id)!;
        expect(r.sessions).toBe(b.sessions);
        expect(r.activeMinutes).toBeCloseTo(b.activeMinutes, 9);
        expect({ role: r.role, score: r.score, signals: r.signals, excluded: r.excluded, banned: r.banned }).toEqual({
          role: b.role,
          score: b.score,
          signals: b.signals,
          excluded: b.excluded,
          banned: b.banned,
        });
      }
    }
    // The moderator's figures are their guild's only: smaller than the operator's for someone.
    const all = await peopleOverview(prisma, operator, SALT);
    const guild = await peopleOverview(prisma, moderator, SALT);
    expect(guild.some((g) => g.activeMinutes < all.find((a) => a.id === g.id)!.activeMinutes)).toBe(true);
    // Each kind of row is there: a score, one that is not a number, an exclusion, a ban; the simulated person is not.
    expect(all.some((r) => r.score === 0.25) && all.some((r) => r.excluded) && all.some((r) => r.banned)).toBe(true);
    expect(all).toHaveLength(5);
  });

  it("computes each session's active time with tasks/study-pay.ts activeMs, as sessionSummaries does", async () => {
    const { prisma } = get();
    const before = new Map((await sessionSummaries(prisma, {})).map((s) => [s.id, s.activeMs]));
    const after = await sessionTimes(prisma, {});
    expect(after).toHaveLength(before.size);
    for (const s of after) expect(s.activeMs).toBe(before.get(s.id));
    // A pause over the idle gap is left out somewhere, so the rule is exercised and not just the span.
    expect([...before.values()].some((ms) => ms > 0)).toBe(true);
  });

  it("runs the policies page's grouped reads here too (both leaderboards in one query, the judgements' digest)", async () => {
    const { prisma } = get();
    const boards = await leaderboards(prisma, operator);
    const scored = await prisma.evaluation.count({
      where: { session: { goldSourceId: null, policyVersionId: { not: null } } },
    });
    expect(boards.backend.rows.reduce((a, r) => a + r.sessions, 0)).toBe(scored);
    expect(boards.frontend.rows).toEqual([]);
    expect((await judgementsDigest(prisma)).n).toBe((await preferenceJudgements(prisma)).length);
  });

  it('gives the median and per-person sums in SQL that the rows gave, for every kind of selector', async () => {
    const { prisma, study } = get();
    expect(await prisma.session.count({ where: { activeMs: { not: null } } })).toBe(0); // all from moments here
    expect(await sqlAgainstRows(prisma, study)).toBeGreaterThan(0);
  });

  it('gives the same figures once the ended sessions hold their active time (prisma/active-time-store.ts)', async () => {
    const { prisma, study } = get();
    const [progress, payouts, people] = [
      await progressBefore(prisma, study, NOW),
      await payoutsBefore(prisma, study),
      await peopleBefore(prisma, operator),
    ];
    expect(await recordActiveTimes(prisma)).toBeGreaterThan(0);
    expect(await prisma.session.count({ where: { activeMs: null, endedAt: { not: null } } })).toBe(0);
    expect(await prisma.session.count({ where: { activeMs: null } })).toBeGreaterThan(0); // active ones: read from moments
    expect({ ...(await studyProgress(prisma, study, NOW)), starterOnly: undefined }).toEqual({
      ...progress,
      starterOnly: undefined,
    });
    expect((await studyPayouts(prisma, study)).lines).toEqual(payouts.lines);
    for (const r of await peopleOverview(prisma, operator, SALT))
      expect(r.activeMinutes).toBeCloseTo(people.get(r.id)!.activeMinutes, 9);
    // Stored and unstored times mixed (answered sessions without an end keep none): still the rows' figures.
    expect(
      await prisma.session.count({ where: { activeMs: null, status: 'answered', studyId: study.id } }),
    ).toBeGreaterThan(0);
    expect(await sqlAgainstRows(prisma, study)).toBeGreaterThan(0);
  });
}

describe('study stats on Postgres', () => {
  let t: TestDatabase;
  let study: StudyWithArms;
  beforeAll(async () => {
    t = await createTestDatabase();
    study = await seed(t.prisma);
  }, 180_000);
  afterAll(() => t?.drop());
  checks(() => ({ prisma: t.prisma, study }));
});

describe('study stats on PGlite', () => {
  const parent = mkdtempSync(join(tmpdir(), 'sweetloop-study-stats-'));
  let db: Database;
  let study: StudyWithArms;
  beforeAll(async () => {
    db = await openDatabase({ pgliteDir: join(parent, 'pglite') });
    await migrate(db);
    study = await seed(db.prisma);
  }, 180_000);
  afterAll(async () => {
    await db?.close();
    rmSync(parent, { recursive: true, force: true });
  });
  checks(() => ({ prisma: db.prisma, study }));
});
