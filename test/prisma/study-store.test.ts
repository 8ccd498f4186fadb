// prisma/study-store.ts against a real database: a study stored with its seeded pool, arms and consent hash;
// every refused study leaves nothing; status and consent versions; the default study following the tasks; the
// per-study lock serialising two transactions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../tasks/library.ts';
import { importTasks } from '../../prisma/task-store.ts';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import {
  acceptStudyConsent,
  consentSha256,
  createStudy,
  defaultStudy,
  setStudyConsent,
  setStudyStatus,
  StudyError,
  withStudyLock,
  type NewStudy,
} from '../../prisma/study-store.ts';

let t: TestDatabase;
let train: string[];
let testSplit: string;
let policy: string;
let base: NewStudy;

beforeAll(async () => {
  t = await createTestDatabase();
  await importTasks(t.prisma, builtinTasks({ kind: 'backend' }).slice(0, 12));
  const tasks = await t.prisma.task.findMany({ orderBy: { externalId: 'asc' } });
  train = tasks.filter((x) => x.split === 'train').map((x) => x.id);
  testSplit = tasks.find((x) => x.split === 'test')!.id;
  policy = (
    await t.prisma.policyVersion.create({
      data: {
        name: 'p1',
        algorithm: 'external',
        checkpointPath: '/x',
        checkpointSha256: '0',
        status: 'deployed',
        deployedAt: new Date(),
      },
    })
  ).id;
  base = {
    name: 'pilot',
    kind: 'backend',
    split: 'train',
    perTask: 3,
    seed: 7,
    taskIds: train.slice(0, 6),
    arms: [{ policyVersionId: policy, share: 100 }],
    consentText: 'We record your messages.',
    payPerSessionCents: 250,
    bonusSuccessCents: 100,
    currency: 'EUR',
    maxSessionsPerPerson: 4,
    opensAt: null,
    closesAt: null,
    guildIds: [],
    channelIds: [],
  };
}, 120_000);

afterAll(async () => {
  await t?.drop();
});

describe('study store', () => {
  it("stores a study with its pool in the seed's order, its arms and its consent text's version and hash", async () => {
    const s = await createStudy(t.prisma, 'cli', base, { requireConsent: true });
    expect(s).toMatchObject({
      name: 'pilot',
      perTask: 3,
      status: 'open',
      consentVersion: 1,
      consentSha256: consentSha256('We record your messages.'),
      payPerSessionCents: 250,
    });
    expect(s.consentSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(s.arms.map((a) => [a.policyVersion.name, a.share])).toEqual([['p1', 100]]);
    const pool = await t.prisma.studyTask.findMany({ where: { studyId: s.id }, orderBy: { position: 'asc' } });
    expect(pool.map((p) => p.position)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(new Set(pool.map((p) => p.taskId))).toEqual(new Set(base.taskIds));
    // The same tasks and seed give the same order; another seed another one.
    const again = await createStudy(
      t.prisma,
      'cli',
      { ...base, name: 'pilot-b', taskIds: [...base.taskIds].reverse() },
      { requireConsent: false },
    );
    const other = await createStudy(t.prisma, 'cli', { ...base, name: 'pilot-c', seed: 8 }, { requireConsent: false });
    const order = async (id: string) =>
      (await t.prisma.studyTask.findMany({ where: { studyId: id }, orderBy: { position: 'asc' } })).map(
        (p) => p.taskId,
      );
    expect(await order(again.id)).toEqual(pool.map((p) => p.taskId));
    expect(await order(other.id)).not.toEqual(pool.map((p) => p.taskId));
    expect(await t.prisma.auditLog.count({ where: { action: 'study.create', target: 'pilot' } })).toBe(1);
  });

  it('refuses bad input with a clear error and creates nothing', async () => {
    const before = await t.prisma.study.count();
    const cases: [Partial<NewStudy>, RegExp, boolean?][] = [
      [{ perTask: 0 }, /at least 1, got 0/],
      [{ arms: [{ policyVersionId: policy, share: 60 }] }, /sum to 100, they sum to 60/],
      [{ opensAt: new Date('2027-01-02'), closesAt: new Date('2027-01-01') }, /closes .* before it opens/],
      [{ taskIds: [train[0]!, '99999999-9999-4999-8999-999999999999'] }, /Unknown task id\(s\): 99999999-/],
      [{ taskIds: [testSplit] }, /test-split backend task; this study takes train-split/],
      [{ name: 'pilot' }, /named "pilot" exists already/],
      [{ name: 'default' }, /"default" is the name of the study the bot uses/],
      [{ consentText: null }, /needs a consent text/, true],
      [{ payPerSessionCents: 100, currency: null }, /need a currency/],
    ];
    for (const [change, message, requireConsent] of cases) {
      const err = await createStudy(
        t.prisma,
        'cli',
        { ...base, name: 'fresh', ...change },
        { requireConsent: requireConsent ?? false },
      ).catch((e) => e);
      expect(err, String(message)).toBeInstanceOf(StudyError);
      expect(err.message).toMatch(message);
    }
    expect(await t.prisma.study.count()).toBe(before);
    expect(await t.prisma.studyTask.count({ where: { study: { name: 'fresh' } } })).toBe(0);
  });

  it('pauses, resumes and closes (audited); a closed study stays closed; no opening without consent on Discord', async () => {
    await createStudy(t.prisma, 'cli', { ...base, name: 'silent', consentText: null }, { requireConsent: false });
    expect((await setStudyStatus(t.prisma, 'cli', 'silent', 'paused', { requireConsent: true })).status).toBe('paused');
    await expect(setStudyStatus(t.prisma, 'cli', 'silent', 'open', { requireConsent: true })).rejects.toThrow(
      /has no consent text/,
    );
    expect((await setStudyStatus(t.prisma, 'cli', 'silent', 'open', { requireConsent: false })).status).toBe('open');
    await setStudyStatus(t.prisma, 'cli', 'silent', 'closed', { requireConsent: false });
    await expect(setStudyStatus(t.prisma, 'cli', 'silent', 'open', { requireConsent: false })).rejects.toThrow(
      /does not open again/,
    );
    await expect(setStudyStatus(t.prisma, 'cli', 'nope', 'paused', { requireConsent: false })).rejects.toThrow(
      /No study named "nope"/,
    );
    const actions = (
      await t.prisma.auditLog.findMany({ where: { target: 'silent' }, orderBy: { createdAt: 'asc' } })
    ).map((a) => a.action);
    expect(actions).toEqual(['study.create', 'study.pause', 'study.resume', 'study.close']);
  });

  it('versions the consent text and records which version a person accepted; a stale version is refused', async () => {
    const s1 = await t.prisma.study.findUniqueOrThrow({ where: { name: 'pilot' } });
    const p = await acceptStudyConsent(t.prisma, 'u:1', 'one', s1.id, 1);
    expect(p.consentGivenAt).not.toBeNull();
    const s2 = await setStudyConsent(t.prisma, 'cli', 'pilot', 'We record your messages and your ratings.');
    expect(s2.consentVersion).toBe(2);
    expect(s2.consentSha256).toBe(consentSha256('We record your messages and your ratings.'));
    expect(
      (await setStudyConsent(t.prisma, 'cli', 'pilot', 'We record your messages and your ratings.')).consentVersion,
    ).toBe(2); // same text: same version
    await expect(acceptStudyConsent(t.prisma, 'u:1', 'one', s1.id, 1)).rejects.toThrow(
      /has changed since it was shown/,
    );
    await acceptStudyConsent(t.prisma, 'u:1', 'one', s1.id, 2);
    const accepted = await t.prisma.consentAcceptance.findMany({
      where: { participantId: p.id },
      orderBy: { version: 'asc' },
    });
    expect(accepted.map((a) => [a.version, a.sha256])).toEqual([
      [1, consentSha256('We record your messages.')],
      [2, s2.consentSha256],
    ]);
  });

  it("keeps the default study's pool up with the stored tasks", async () => {
    const d = await defaultStudy(t.prisma);
    expect(d).toMatchObject({ name: 'default', perTask: null, arms: [] });
    expect(await t.prisma.studyTask.count({ where: { studyId: d.id } })).toBe(12);
    await importTasks(t.prisma, builtinTasks({ kind: 'frontend' }).slice(0, 2));
    await defaultStudy(t.prisma);
    const pool = await t.prisma.studyTask.findMany({
      where: { studyId: d.id },
      include: { task: true },
      orderBy: { position: 'asc' },
    });
    expect(pool.map((p) => p.position)).toEqual([...Array(14).keys()]);
    expect(pool.slice(12).every((p) => p.task.kind === 'frontend')).toBe(true);
  });

  it('runs one transaction at a time per study under its lock', async () => {
    const s = await t.prisma.study.findUniqueOrThrow({ where: { name: 'pilot' } });
    const events: string[] = [];
    const hold = (name: string, ms: number) =>
      withStudyLock(t.prisma, s.id, async () => {
        events.push(`${name} in`);
        await new Promise((r) => setTimeout(r, ms));
        events.push(`${name} out`);
      });
    const first = hold('a', 400);
    await new Promise((r) => setTimeout(r, 100));
    await Promise.all([first, hold('b', 10)]);
    expect(events).toEqual(['a in', 'a out', 'b in', 'b out']);
  });
});
