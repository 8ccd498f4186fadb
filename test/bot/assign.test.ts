// bot/assign.ts against real databases: which study a person joins where they ask, tasks filled to k in the
// seeded order from k different people, freed slots, a full study saying so, the per-person cap, arms split within
// each task, and people racing for the last slots (Postgres and PGlite) never overfilling a task.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../tasks/library.ts';
import { importTasks } from '../../prisma/task-store.ts';
import { acceptConsent } from '../../prisma/participant-store.ts';
import { createSession } from '../../prisma/session-store.ts';
import { createStudy, setStudyStatus, type NewStudy, type StudyWithArms } from '../../prisma/study-store.ts';
import { openDatabase, type Database } from '../../prisma/db.ts';
import { migrate } from '../../prisma/migrate.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { armFor, assignTask, studyFor, studyState, StudyRefusedError, type TaskPick } from '../../bot/assign.ts';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';

let t: TestDatabase;
let tasks: string[];
let policies: string[];

async function setUp(prisma: PrismaClient): Promise<{ tasks: string[]; policies: string[] }> {
  await importTasks(prisma, builtinTasks({ kind: 'backend', split: 'train' }).slice(0, 8));
  const ids = (await prisma.task.findMany({ orderBy: { externalId: 'asc' } })).map((x) => x.id);
  const pv = [];
  for (const name of ['arm-a', 'arm-b'])
    pv.push(
      (
        await prisma.policyVersion.create({
          data: { name, algorithm: 'external', checkpointPath: '/x', checkpointSha256: '0' },
        })
      ).id,
    );
  return { tasks: ids, policies: pv };
}

function study(name: string, o: Partial<NewStudy> = {}): NewStudy {
  return {
    name,
    kind: 'backend',
    split: 'train',
    perTask: 2,
    seed: 3,
    taskIds: tasks.slice(0, 3),
    arms: [{ policyVersionId: policies[0]!, share: 100 }],
    consentText: null,
    payPerSessionCents: null,
    bonusSuccessCents: null,
    currency: null,
    maxSessionsPerPerson: null,
    opensAt: null,
    closesAt: null,
    guildIds: [],
    channelIds: [],
    ...o,
  };
}

/** Assigns and creates the session as the engine does, in the same locked transaction. */
function take(
  prisma: PrismaClient,
  s: StudyWithArms,
  participantId: string,
): Promise<TaskPick & { sessionId: string }> {
  return assignTask(prisma, s, participantId, 'backend', async (tx, pick) => {
    const session = await createSession(tx, {
      taskId: pick.taskId,
      participantId,
      policyVersionId: pick.arm?.policyVersionId ?? null,
      channel: 'console',
      simulated: false,
      studyId: s.id,
    });
    return { ...pick, sessionId: session.id };
  });
}

const person = async (prisma: PrismaClient, name: string) => (await acceptConsent(prisma, `u:${name}`, name)).id;

/** Many people asking at once; each result is the task's position or the refusal's reason. */
async function race(prisma: PrismaClient, s: StudyWithArms, n: number, prefix: string): Promise<(number | string)[]> {
  const people = await Promise.all(Array.from({ length: n }, (_, i) => person(prisma, `${prefix}${i}`)));
  return Promise.all(
    people.map((p) =>
      take(prisma, s, p).then(
        (r) => r.position,
        (e: unknown) => (e instanceof StudyRefusedError ? e.reason : Promise.reject(e)),
      ),
    ),
  );
}

async function perTask(prisma: PrismaClient, studyId: string): Promise<Map<string, string[]>> {
  const rows = await prisma.session.findMany({ where: { studyId, status: { in: ['active', 'answered'] } } });
  const m = new Map<string, string[]>();
  for (const r of rows) m.set(r.taskId, [...(m.get(r.taskId) ?? []), r.participantId]);
  return m;
}

beforeAll(async () => {
  t = await createTestDatabase();
  ({ tasks, policies } = await setUp(t.prisma));
}, 120_000);

afterAll(async () => {
  await t?.drop();
});

describe('assignment in a study', () => {
  it('fills tasks to k in the seeded order from different people, frees abandoned slots, and says when the study is full', async () => {
    const s = await createStudy(t.prisma, 'cli', study('fill'), { requireConsent: false });
    const [p1, p2, p3, p4, p5] = await Promise.all(['f1', 'f2', 'f3', 'f4', 'f5'].map((n) => person(t.prisma, n)));
    const pos = async (p: string) => (await take(t.prisma, s, p!)).position;
    expect(await pos(p1!)).toBe(0);
    expect(await pos(p2!)).toBe(0);
    expect(await pos(p3!)).toBe(1); // task 0 is full
    expect(await pos(p1!)).toBe(1); // p1 had task 0
    expect(await pos(p4!)).toBe(2);
    expect(await pos(p2!)).toBe(2);
    const full = await take(t.prisma, s, p5!).catch((e) => e);
    expect(full).toBeInstanceOf(StudyRefusedError);
    expect(full).toMatchObject({ reason: 'study-full', message: expect.stringMatching(/^This study is full/) });
    // p3 abandons: the slot on task 1 is free again, but not for p1, who had task 1.
    const p3s = await t.prisma.session.findFirstOrThrow({ where: { studyId: s.id, participantId: p3 } });
    await t.prisma.session.update({ where: { id: p3s.id }, data: { status: 'abandoned' } });
    expect(await take(t.prisma, s, p1!).catch((e) => e)).toMatchObject({
      reason: 'no-task',
      message: expect.stringMatching(/already had every task/),
    });
    expect(await pos(p5!)).toBe(1);
    const filled = await perTask(t.prisma, s.id);
    expect([...filled.values()].map((ps) => new Set(ps).size)).toEqual([2, 2, 2]);
  });

  it('caps the sessions of one person, and refuses once the study is paused, even after it was joined', async () => {
    const s = await createStudy(t.prisma, 'cli', study('capped', { maxSessionsPerPerson: 1 }), {
      requireConsent: false,
    });
    const p = await person(t.prisma, 'cap');
    await take(t.prisma, s, p);
    expect(await take(t.prisma, s, p).catch((e) => e)).toMatchObject({
      reason: 'study-limit',
      message: expect.stringMatching(/the 1 session\(s\) this study allows per person/),
    });
    await setStudyStatus(t.prisma, 'cli', 'capped', 'paused', { requireConsent: false });
    expect(await take(t.prisma, s, await person(t.prisma, 'late')).catch((e) => e)).toMatchObject({
      reason: 'study-paused',
      message: expect.stringMatching(/This study is paused/),
    });
  });

  it('never overfills a task when many people ask for the last slots at the same moment (Postgres)', async () => {
    const s = await createStudy(t.prisma, 'cli', study('race', { perTask: 3, taskIds: tasks.slice(3, 5) }), {
      requireConsent: false,
    });
    const results = await race(t.prisma, s, 10, 'r');
    expect(results.filter((r) => r === 'study-full')).toHaveLength(4);
    expect(results.filter((r) => typeof r === 'number').sort()).toEqual([0, 0, 0, 1, 1, 1]);
    for (const ps of (await perTask(t.prisma, s.id)).values()) expect(new Set(ps).size).toBe(3);
  });

  it("splits each task's k sessions between the arms in their shares, the extra session alternating between tasks", async () => {
    const s = await createStudy(
      t.prisma,
      'cli',
      study('arms', {
        perTask: 3,
        taskIds: tasks.slice(0, 6),
        arms: [
          { policyVersionId: policies[0]!, share: 50 },
          { policyVersionId: policies[1]!, share: 50 },
        ],
      }),
      { requireConsent: false },
    );
    await race(t.prisma, s, 18, 'arm');
    const rows = await t.prisma.session.findMany({ where: { studyId: s.id } });
    const byTask = new Map<string, string[]>();
    for (const r of rows) byTask.set(r.taskId, [...(byTask.get(r.taskId) ?? []), r.policyVersionId!]);
    expect(byTask.size).toBe(6);
    for (const arms of byTask.values()) expect(new Set(arms).size).toBe(2); // 2 + 1 on every task
    expect(rows.filter((r) => r.policyVersionId === policies[0]).length).toBe(9);
    // Shares other than halves: 30/70 over k = 10 gives 3 and 7 on each task.
    const shares = {
      seed: 1,
      arms: [
        { policyVersionId: 'a', share: 30 },
        { policyVersionId: 'b', share: 70 },
      ],
    } as unknown as StudyWithArms;
    for (const position of [0, 1, 2]) {
      const counts = new Map<string, number>();
      for (let i = 0; i < 10; i++) {
        const arm = armFor(shares, position, counts).policyVersionId;
        counts.set(arm, (counts.get(arm) ?? 0) + 1);
      }
      expect(Object.fromEntries(counts)).toEqual({ a: 3, b: 7 });
    }
  });

  it('joins the open study bound to the channel, then the guild, then the oldest unbound one, else the default study', async () => {
    const now = new Date();
    const day = 86_400_000;
    await createStudy(t.prisma, 'cli', study('chan', { channelIds: ['c1'] }), { requireConsent: false });
    await createStudy(t.prisma, 'cli', study('guild', { guildIds: ['g1'] }), { requireConsent: false });
    await createStudy(t.prisma, 'cli', study('chan-paused', { channelIds: ['c2'] }), { requireConsent: false });
    await setStudyStatus(t.prisma, 'cli', 'chan-paused', 'paused', { requireConsent: false });
    await createStudy(
      t.prisma,
      'cli',
      study('chan-later', { channelIds: ['c3'], opensAt: new Date(now.getTime() + day) }),
      { requireConsent: false },
    );
    const at = async (where: { guildId?: string; channelId?: string }) => {
      const r = await studyFor(t.prisma, where, now);
      return r.refusal ? `${r.study.name}:${r.refusal.reason}` : r.study.name;
    };
    expect(await at({ guildId: 'g1', channelId: 'c1' })).toBe('chan');
    expect(await at({ guildId: 'g1', channelId: 'elsewhere' })).toBe('guild');
    expect(await at({ guildId: 'g1', channelId: 'c2' })).toBe('chan-paused:study-paused');
    expect(await at({ channelId: 'c3' })).toBe('chan-later:study-not-open');
    // Unbound: the oldest open one (earlier tests made "fill", full; "capped" is paused, "race" and "arms" open).
    expect(await at({ guildId: 'g9' })).toBe('fill');
    for (const name of ['fill', 'race', 'arms'])
      await setStudyStatus(t.prisma, 'cli', name, 'closed', { requireConsent: false });
    expect(await at({ guildId: 'g9' })).toBe('capped:study-paused'); // an unbound paused study stops collection
    await setStudyStatus(t.prisma, 'cli', 'capped', 'closed', { requireConsent: false });
    expect(await at({ guildId: 'g9' })).toBe('default');
    expect(studyState({ status: 'open', opensAt: null, closesAt: new Date(now.getTime() - 1) }, now)).toBe('closed');
    expect(
      studyState(
        { status: 'open', opensAt: new Date(now.getTime() - day), closesAt: new Date(now.getTime() + day) },
        now,
      ),
    ).toBe('open');
  });
});

describe('assignment on PGlite', () => {
  const parent = mkdtempSync(join(tmpdir(), 'sweetloop-assign-'));
  let db: Database;
  beforeAll(async () => {
    db = await openDatabase({ pgliteDir: join(parent, 'pglite') });
    await migrate(db);
  }, 180_000);
  afterAll(async () => {
    await db?.close();
    rmSync(parent, { recursive: true, force: true });
  });

  it('never overfills a task when people race for the last slots', async () => {
    const ids = await setUp(db.prisma);
    const s = await createStudy(
      db.prisma,
      'cli',
      {
        ...study('pglite', { perTask: 2 }),
        taskIds: ids.tasks.slice(0, 2),
        arms: [{ policyVersionId: ids.policies[0]!, share: 100 }],
      },
      { requireConsent: false },
    );
    const results = await race(db.prisma, s, 6, 'pg');
    expect(results.filter((r) => r === 'study-full')).toHaveLength(2);
    expect(results.filter((r) => typeof r === 'number').sort()).toEqual([0, 0, 1, 1]);
  });
});
