// `sweetloop train --study NAME` (and TRAINER_STUDY): a run trains on that study's answered sessions only, and
// its snapshot records the study with the other filters; an evaluation study (split test) and an unknown name are
// refused with a clear message and create no run, through the data selection and through the real command.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { SWEETLOOP_ENTRY } from '../../testing/sweetloop-cli.ts';
import { importTasks } from '../../prisma/task-store.ts';
import { createStudy, defaultStudy, type NewStudy } from '../../prisma/study-store.ts';
import { generateMiniTasks } from '../../tasks/mini.ts';
import { DataSelectionError, selectTrainingData, type DataFilter } from '../../trainer/data.ts';
import { dataFilterFor } from '../../trainer/commands.ts';
import { createRun, type RunConfig } from '../../trainer/runs.ts';
import { trainConfig } from '../../trainer/presets.ts';

let t: TestDatabase;
let root: string;
let train: string[];
let test: string[];
let policy: string;
let counter = 0;

function study(name: string, taskIds: string[], o: Partial<NewStudy> = {}): NewStudy {
  return {
    name,
    kind: 'backend',
    split: 'train',
    perTask: 3,
    seed: 1,
    taskIds,
    arms: [{ policyVersionId: policy, share: 100 }],
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

/** An answered, evaluated session of a new consenting person in `studyId` (status as given). */
async function session(
  studyId: string,
  taskId: string,
  score: number,
  status: 'answered' | 'abandoned' = 'answered',
): Promise<string> {
  const person = `94000000000000${String(counter++).padStart(4, '0')}`;
  const p = await t.prisma.participant.create({
    data: { discordUserId: person, displayName: person, consentGivenAt: new Date() },
  });
  const s = await t.prisma.session.create({
    data: {
      taskId,
      participantId: p.id,
      policyVersionId: policy,
      studyId,
      channel: 'discord',
      status,
      answer: 'def f(): pass',
      reward: score,
      turnCount: 2,
      endedAt: new Date(),
      turns: {
        create: [
          { index: 0, role: 'agent', content: 'What should happen with large orders?' },
          { index: 1, role: 'human', content: 'They get a discount from ten items on.' },
          { index: 2, role: 'agent', content: 'I WANT TO ANSWER: def f(): pass' },
        ],
      },
      evaluation: { create: { score, success: score === 1, detail: {}, evaluatorVersion: 'test' } },
    },
  });
  return s.id;
}

function runConfig(data: DataFilter): RunConfig {
  return {
    algorithm: 'rft',
    preset: 'cpu-small',
    train: trainConfig('cpu-small'),
    fromVersionId: policy,
    fromVersionName: 'base',
    fromCheckpoint: '/tmp/unused',
    kind: 'backend',
    ratingWeight: 0,
    data,
  };
}

const pilotSessions: string[] = [];

beforeAll(async () => {
  t = await createTestDatabase();
  root = mkdtempSync(join(tmpdir(), 'sweetloop-study-data-'));
  await importTasks(t.prisma, generateMiniTasks({ seed: 5, count: 4, split: 'train' }));
  await importTasks(t.prisma, generateMiniTasks({ seed: 6, count: 2, split: 'test' }));
  train = (await t.prisma.task.findMany({ where: { split: 'train' }, orderBy: { id: 'asc' } })).map((x) => x.id);
  test = (await t.prisma.task.findMany({ where: { split: 'test' }, orderBy: { id: 'asc' } })).map((x) => x.id);
  const dir = join(root, 'policy');
  mkdirSync(dir);
  writeFileSync(join(dir, 'config.json'), '{}');
  policy = (
    await t.prisma.policyVersion.create({
      data: { name: 'base', algorithm: 'starter', checkpointPath: dir, status: 'deployed', deployedAt: new Date() },
    })
  ).id;
  const pilot = await createStudy(t.prisma, 'cli', study('pilot', train.slice(0, 2)), { requireConsent: false });
  const other = await createStudy(t.prisma, 'cli', study('other', train.slice(2, 4)), { requireConsent: false });
  const held = await createStudy(t.prisma, 'cli', study('held-out', test, { split: 'test' }), {
    requireConsent: false,
  });
  pilotSessions.push(
    await session(pilot.id, train[0]!, 1),
    await session(pilot.id, train[0]!, 0.25),
    await session(pilot.id, train[1]!, 0.5),
  );
  await session(pilot.id, train[1]!, 0.75, 'abandoned');
  await session(other.id, train[2]!, 1);
  await session(other.id, train[3]!, 0);
  await session((await defaultStudy(t.prisma)).id, train[0]!, 0.5);
  await session(held.id, test[0]!, 1);
  await session(held.id, test[1]!, 0);
}, 120_000);

afterAll(async () => {
  await t?.drop();
  rmSync(root, { recursive: true, force: true });
});

describe('training on one study', () => {
  it("uses that study's answered sessions only, and the run records the study in its config and snapshot", async () => {
    const everyone = await selectTrainingData(
      t.prisma,
      { ratingWeight: 0, kind: 'backend' },
      { source: 'human', simulatedWeight: 1, seed: 1 },
    );
    expect(everyone.trajectories).toHaveLength(6);
    const data = dataFilterFor({ seed: 1, trainingData: { source: 'human', simulatedWeight: 1 } }, { study: 'pilot' });
    expect(data).toEqual({ source: 'human', simulatedWeight: 1, study: 'pilot', seed: 1 });
    const run = await createRun({ prisma: t.prisma, checkpointRoot: join(root, 'ck') }, runConfig(data));
    const snap = run.dataSnapshot as unknown as {
      filter: DataFilter;
      sessions: { id: string }[];
      counts: { human: number };
    };
    expect(snap.filter).toEqual({ source: 'human', simulatedWeight: 1, study: 'pilot', seed: 1 });
    expect((run.config as unknown as RunConfig).data.study).toBe('pilot');
    expect(snap.sessions.map((s) => s.id).sort()).toEqual([...pilotSessions].sort());
    expect(snap.counts.human).toBe(3);
  });

  it('refuses an evaluation study, an unknown name and a study of the other kind, creating nothing', async () => {
    const before = await t.prisma.trainingRun.count();
    const refused = async (f: Partial<DataFilter>, kind: 'backend' | 'frontend' = 'backend') =>
      createRun(
        { prisma: t.prisma, checkpointRoot: join(root, 'ck') },
        { ...runConfig({ source: 'human', simulatedWeight: 1, seed: 1, ...f }), kind },
      ).catch((e: unknown) => e);
    const held = await refused({ study: 'held-out' });
    expect(held).toBeInstanceOf(DataSelectionError);
    expect((held as Error).message).toBe(
      '--study: "held-out" is an evaluation study (split test): its sessions measure policies and are never trained on',
    );
    const unknown = await refused({ study: 'nosuch' });
    expect(unknown).toBeInstanceOf(DataSelectionError);
    expect((unknown as Error).message).toMatch(/^--study: no study named "nosuch" \(known: .*\bpilot\b.*\)$/);
    expect(await refused({ study: 'pilot' }, 'frontend')).toMatchObject({
      message: '--study: "pilot" has only backend tasks; train it with --kind backend',
    });
    expect(await refused({ study: ' ' })).toMatchObject({ message: '--study: give the name of a study' });
    expect(await t.prisma.trainingRun.count()).toBe(before);
  });

  it('a study with too few answered sessions says so, naming the study', async () => {
    const thin = await createStudy(t.prisma, 'cli', study('thin', train.slice(0, 1)), { requireConsent: false });
    await session(thin.id, train[0]!, 1);
    const err = await selectTrainingData(
      t.prisma,
      { ratingWeight: 0, kind: 'backend' },
      { source: 'human', simulatedWeight: 1, study: 'thin', seed: 1 },
    ).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(
      /^only 1 usable human backend training session\(s\) in study "thin"; a run needs at least 2/,
    );
  });
});

describe('sweetloop train --study', () => {
  async function train(...args: string[]): Promise<{ code: number | null; stderr: string }> {
    const child = spawn(process.execPath, [SWEETLOOP_ENTRY, 'train', '--from', 'base', '--algo', 'rft', ...args], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: t.url, CHECKPOINT_DIR: join(root, 'ck'), TFJS_BACKEND: 'cpu' },
    });
    let stderr = '';
    child.stderr.on('data', (c) => (stderr += c));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    return { code, stderr };
  }

  it('refuses an evaluation study and an unknown name through the real command, creating no run', async () => {
    const before = await t.prisma.trainingRun.count();
    const held = await train('--study', 'held-out');
    expect(held.code).toBe(1);
    expect(held.stderr).toContain('--study: "held-out" is an evaluation study (split test)');
    const unknown = await train('--study', 'nosuch');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('--study: no study named "nosuch"');
    expect(await t.prisma.trainingRun.count()).toBe(before);
  }, 120_000);
});
