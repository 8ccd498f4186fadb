// Training data chosen explicitly: the source (human, simulated, both with a weight), quality and rating
// thresholds, moderators' exclusions and automatic paste flags, each checked on the data snapshot a run stores;
// and `sweetloop train --data human` refusing, through the real command, when people have played too little.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { importTasks } from '../../prisma/task-store.ts';
import { storeFinishedSession } from '../../prisma/finished-session-store.ts';
import { excludeFromTraining, PASTE_FLAG_REASON } from '../../prisma/quality-store.ts';
import { generateMiniTasks } from '../../tasks/mini.ts';
import {
  DataSelectionError,
  keepsSimulated,
  loadTrajectories,
  selectTrainingData,
  validateDataFilter,
  type DataFilter,
} from '../../trainer/data.ts';
import { trajectoryKey } from '../../trainer/pairs.ts';
import { dataFilterFor } from '../../trainer/commands.ts';
import { createRun, type RunConfig } from '../../trainer/runs.ts';
import { trainConfig } from '../../trainer/presets.ts';
import { streamSessionSummaries } from '../../bot/export/query.ts';
import { SWEETLOOP_ENTRY } from '../../testing/sweetloop-cli.ts';

let t: TestDatabase;
let taskIds: string[];
let counter = 0;

beforeAll(async () => {
  t = await createTestDatabase();
  await importTasks(t.prisma, generateMiniTasks({ seed: 11, count: 4, split: 'train' }));
  taskIds = (await t.prisma.task.findMany({ orderBy: { id: 'asc' } })).map((x) => x.id);
}, 120_000);
afterAll(async () => {
  await t?.drop();
});

/** A consented person (created on first use) and one answered, evaluated session of theirs. */
async function humanSession(
  person: string,
  o: { score: number; rating?: number; replies?: string[]; taskIndex?: number } = { score: 0.5 },
): Promise<string> {
  const p = await t.prisma.participant.upsert({
    where: { discordUserId: person },
    create: { discordUserId: person, displayName: person, consentGivenAt: new Date() },
    update: {},
  });
  const taskId = taskIds[(o.taskIndex ?? counter++) % taskIds.length]!;
  const replies = o.replies ?? ['It takes the price and the quantity; the discount starts at ten items.'];
  const t0 = Date.now() - 3600_000;
  const turns = replies.flatMap((r, k) => [
    {
      index: 2 * k,
      role: 'agent' as const,
      content: 'What should happen with large orders? Please describe the rule.',
      createdAt: new Date(t0 + k * 60_000),
    },
    { index: 2 * k + 1, role: 'human' as const, content: r, createdAt: new Date(t0 + k * 60_000 + 30_000) },
  ]);
  turns.push({
    index: turns.length,
    role: 'agent',
    content: 'I WANT TO ANSWER: def f(): pass',
    createdAt: new Date(t0 + 50 * 60_000),
  });
  const s = await t.prisma.session.create({
    data: {
      taskId,
      participantId: p.id,
      channel: 'discord',
      status: 'answered',
      answer: 'def f(): pass',
      reward: o.score,
      turnCount: replies.length + 1,
      endedAt: new Date(),
      turns: { create: turns },
      evaluation: { create: { score: o.score, success: o.score === 1, detail: {}, evaluatorVersion: 'test' } },
      ...(o.rating !== undefined ? { ratings: { create: { raterId: p.id, value: o.rating } } } : {}),
    },
  });
  return s.id;
}

async function simulatedSession(score: number): Promise<string> {
  return storeFinishedSession(t.prisma, {
    taskId: taskIds[counter++ % taskIds.length]!,
    policyVersionId: null,
    collaborator: 'rule-simulator',
    channel: 'simulated',
    turns: [
      { role: 'agent', content: 'What is the rule?' },
      { role: 'human', content: 'Ten items or more get a discount.' },
      { role: 'agent', content: 'I WANT TO ANSWER: def f(): pass' },
    ],
    answer: 'def f(): pass',
    endReason: 'answered',
    evaluation: { score, success: score === 1, detail: {}, evaluatorVersion: 'test' } as never,
    startedAt: new Date(Date.now() - 60_000),
    endedAt: new Date(),
  });
}

function runConfig(data: DataFilter): RunConfig {
  return {
    algorithm: 'rft',
    preset: 'cpu-small',
    train: trainConfig('cpu-small'),
    fromVersionId: '00000000-0000-0000-0000-000000000000',
    fromVersionName: 'x',
    fromCheckpoint: '/tmp/unused',
    kind: 'backend',
    ratingWeight: 0,
    data,
  };
}

interface Snapshot {
  filter: DataFilter;
  counts: { human: number; simulated: number; simulatedLeftOut: number };
  sessions: { id: string; reward: number; simulated: boolean }[];
}

async function snapshotOf(data: DataFilter): Promise<Snapshot> {
  const run = await createRun({ prisma: t.prisma, checkpointRoot: '/tmp/unused' }, runConfig(data));
  return run.dataSnapshot as unknown as Snapshot;
}

const human: string[] = [];
const simulated: string[] = [];

describe('choosing the training data', () => {
  it('a filter with a bad value is refused before anything is read', () => {
    const ok: DataFilter = { source: 'both', simulatedWeight: 1, seed: 1 };
    expect(() => validateDataFilter({ ...ok, source: 'people' as never })).toThrow(
      /--data must be one of human, simulated, both/,
    );
    expect(() => validateDataFilter({ ...ok, simulatedWeight: 0 })).toThrow(/--simulated-weight must be in \(0, 1\]/);
    expect(() => validateDataFilter({ ...ok, source: 'human', simulatedWeight: 0.5 })).toThrow(/only with --data both/);
    expect(() => validateDataFilter({ ...ok, minRating: 7 })).toThrow(/--min-rating must be from 1 to 5/);
    expect(() => validateDataFilter({ ...ok, source: 'simulated', minQuality: 0.5 })).toThrow(
      /do not apply to --data simulated/,
    );
  });

  it('--data human refuses with a clear message while people have played too little', async () => {
    human.push(await humanSession('100000000000000001', { score: 1, rating: 5 }));
    for (let i = 0; i < 6; i++) simulated.push(await simulatedSession(i % 2 ? 1 : 0.25));
    const err = await selectTrainingData(
      t.prisma,
      { ratingWeight: 0, kind: 'backend' },
      { source: 'human', simulatedWeight: 1, seed: 1 },
    ).catch((e) => e);
    expect(err).toBeInstanceOf(DataSelectionError);
    expect(err.message).toMatch(
      /only 1 usable human backend training session\(s\); a run needs at least 2: collect more sessions with people/,
    );
    expect(await t.prisma.trainingRun.count()).toBe(0);
  });

  it('--data simulated never touches a human session (checked on the stored snapshot)', async () => {
    human.push(await humanSession('100000000000000002', { score: 0.5, rating: 2 }));
    human.push(await humanSession('100000000000000003', { score: 0.75, rating: 4 }));
    const snap = await snapshotOf({ source: 'simulated', simulatedWeight: 1, seed: 1 });
    expect(snap.filter).toEqual({ source: 'simulated', simulatedWeight: 1, seed: 1 });
    expect(snap.sessions.map((s) => s.id).sort()).toEqual([...simulated].sort());
    const rows = await t.prisma.session.findMany({
      where: { id: { in: snap.sessions.map((s) => s.id) } },
      include: { participant: true },
    });
    expect(rows.every((r) => r.simulated && r.participant.role === 'simulated')).toBe(true);
    expect(snap.counts).toEqual({ human: 0, simulated: 6, simulatedLeftOut: 0 });
  });

  it('--data human takes only people; both takes everyone; the weight keeps a fixed seeded share of simulated sessions', async () => {
    const h = await snapshotOf({ source: 'human', simulatedWeight: 1, seed: 1 });
    expect(h.sessions.map((s) => s.id).sort()).toEqual([...human].sort());
    expect(h.sessions.every((s) => !s.simulated)).toBe(true);

    const all = await snapshotOf({ source: 'both', simulatedWeight: 1, seed: 1 });
    expect(all.sessions.map((s) => s.id).sort()).toEqual([...human, ...simulated].sort());

    const weighted = await snapshotOf({ source: 'both', simulatedWeight: 0.5, seed: 99 });
    const keptSim = weighted.sessions
      .filter((s) => s.simulated)
      .map((s) => s.id)
      .sort();
    // The draw is keyed by the trajectory's content, not its random id.
    const simTrajectories = await loadTrajectories(t.prisma, {
      ratingWeight: 0,
      source: 'both',
      sessionIds: simulated,
    });
    expect(keptSim).toEqual(
      simTrajectories
        .filter((x) => keepsSimulated(trajectoryKey(x), 0.5, 99))
        .map((x) => x.sessionId)
        .sort(),
    );
    expect(
      weighted.sessions
        .filter((s) => !s.simulated)
        .map((s) => s.id)
        .sort(),
    ).toEqual([...human].sort());
    expect(weighted.counts.simulatedLeftOut).toBe(6 - keptSim.length);
    // The same seed chooses the same sessions again.
    const again = await snapshotOf({ source: 'both', simulatedWeight: 0.5, seed: 99 });
    expect(again.sessions.map((s) => s.id)).toEqual(weighted.sessions.map((s) => s.id));
  });

  it('the per-session draw keeps about the weight over many sessions', () => {
    const ids = Array.from({ length: 2000 }, (_, i) => `session-${i}`);
    const kept = ids.filter((id) => keepsSimulated(id, 0.3, 5)).length;
    // Binomial(2000, 0.3): sd ~ 20.5; 4 sd either side.
    expect(kept).toBeGreaterThan(600 - 82);
    expect(kept).toBeLessThan(600 + 82);
  });

  it('--min-rating leaves out lower-rated and unrated human sessions, not simulated ones', async () => {
    const unrated = await humanSession('100000000000000004', { score: 0.5 });
    const snap = await snapshotOf({ source: 'both', simulatedWeight: 1, minRating: 4, seed: 1 });
    const ids = new Set(snap.sessions.map((s) => s.id));
    expect(ids.has(human[0]!)).toBe(true); // rated 5
    expect(ids.has(human[2]!)).toBe(true); // rated 4
    expect(ids.has(human[1]!)).toBe(false); // rated 2
    expect(ids.has(unrated)).toBe(false);
    for (const s of simulated) expect(ids.has(s)).toBe(true);
  });

  it('a session that pasted the reference is flagged and left out; --min-quality leaves out its person', async () => {
    const task = await t.prisma.task.findUniqueOrThrow({ where: { id: taskIds[0]! } });
    const body = task.hiddenReference.split('\n').slice(1).join('\n');
    const paster = '100000000000000005';
    const pasted = await humanSession(paster, {
      score: 1,
      rating: 5,
      taskIndex: 0,
      replies: [`here you go:\n${body}`],
    });
    const careful = await humanSession(paster, { score: 0.5, rating: 4, taskIndex: 1 });
    const snap = await snapshotOf({ source: 'human', simulatedWeight: 1, seed: 1 });
    const ids = new Set(snap.sessions.map((s) => s.id));
    expect(ids.has(pasted)).toBe(false);
    expect(ids.has(careful)).toBe(true);
    const flag = await t.prisma.moderationFlag.findFirstOrThrow({ where: { sessionId: pasted } });
    expect(flag.reason).toBe(PASTE_FLAG_REASON);
    // Whoever runs the training hears how many sessions flags kept out, and why.
    const said: string[] = [];
    await createRun(
      { prisma: t.prisma, checkpointRoot: '/tmp/unused', log: (l) => said.push(l) },
      runConfig({ source: 'human', simulatedWeight: 1, seed: 1 }),
    );
    expect(said).toContainEqual(
      `1 session(s) left out by unresolved moderation flags: ${PASTE_FLAG_REASON} (1). A moderator confirms or clears them on the dashboard's Flags page (/flags).`,
    );
    const q = await t.prisma.participantQuality.findFirstOrThrow({ where: { participant: { discordUserId: paster } } });
    expect(q.score).toBeLessThan(0.6);
    expect((q.signals as Record<string, number>).referencePasted).toBe(1);

    const strict = await snapshotOf({ source: 'human', simulatedWeight: 1, minQuality: 0.8, seed: 1 });
    const strictIds = new Set(strict.sessions.map((s) => s.id));
    expect(strictIds.has(careful)).toBe(false);
    expect(strictIds.has(human[0]!)).toBe(true);
  });

  it('a person excluded by a moderator disappears from the next snapshot but not from exports', async () => {
    const person = '100000000000000003';
    const theirs = human[2]!;
    expect(
      (await snapshotOf({ source: 'human', simulatedWeight: 1, seed: 1 })).sessions.some((s) => s.id === theirs),
    ).toBe(true);
    expect(await excludeFromTraining(t.prisma, '200000000000000001', person, 'answers at random')).toBe(true);
    expect(await excludeFromTraining(t.prisma, '200000000000000001', person, 'again')).toBe(false);
    const after = await snapshotOf({ source: 'human', simulatedWeight: 1, seed: 1 });
    expect(after.sessions.some((s) => s.id === theirs)).toBe(false);
    const exported: string[] = [];
    for await (const page of streamSessionSummaries(t.prisma, {})) exported.push(...page.map((s) => s.id));
    expect(exported).toContain(theirs);
    const audit = await t.prisma.auditLog.findFirstOrThrow({ where: { action: 'participant.exclude-training' } });
    expect(audit.target).toBe(person);
  });

  it('the configured defaults give the filter; the command options override them', () => {
    const s = { seed: 3, trainingData: { source: 'both' as const, simulatedWeight: 0.4, minQuality: 0.5 } };
    expect(dataFilterFor(s)).toEqual({ source: 'both', simulatedWeight: 0.4, minQuality: 0.5, seed: 3 });
    expect(dataFilterFor(s, { source: 'human', minRating: 3 })).toEqual({
      source: 'human',
      simulatedWeight: 1,
      minQuality: 0.5,
      minRating: 3,
      seed: 3,
    });
  });
});

describe('sweetloop train --data human', () => {
  it('refuses through the real command with a clear message and creates no run', async () => {
    const db = await createTestDatabase();
    const root = mkdtempSync(join(tmpdir(), 'sweetloop-data-'));
    try {
      await importTasks(db.prisma, generateMiniTasks({ seed: 11, count: 2, split: 'train' }));
      const dir = join(root, 'policy');
      mkdirSync(dir);
      writeFileSync(join(dir, 'config.json'), '{}');
      await db.prisma.policyVersion.create({
        data: { name: 'base', algorithm: 'starter', checkpointPath: dir, status: 'deployed', deployedAt: new Date() },
      });
      const child = spawn(
        process.execPath,
        [SWEETLOOP_ENTRY, 'train', '--data', 'human', '--from', 'base', '--algo', 'rft'],
        {
          cwd: root,
          env: { ...process.env, DATABASE_URL: db.url, CHECKPOINT_DIR: join(root, 'ck'), TFJS_BACKEND: 'cpu' },
        },
      );
      let stderr = '';
      child.stderr.on('data', (c) => (stderr += c));
      const code = await new Promise<number | null>((r) => child.on('exit', r));
      expect(code).toBe(1);
      expect(stderr).toMatch(
        /only 0 usable human backend training session\(s\); a run needs at least 2: collect more sessions with people/,
      );
      expect(await db.prisma.trainingRun.count()).toBe(0);
    } finally {
      await db.drop();
      rmSync(root, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('quality refresh', () => {
  it('rewrites nothing when no session changed, and rescores a person when one did', async () => {
    const { refreshQuality } = await import('../../prisma/quality-store.ts');
    await refreshQuality(t.prisma);
    const before = await t.prisma.sessionQuality.findMany({ orderBy: { sessionId: 'asc' } });
    const again = await refreshQuality(t.prisma);
    expect(again.participants).toBe(0);
    expect(again.flagged).toEqual([]);
    expect(await t.prisma.sessionQuality.findMany({ orderBy: { sessionId: 'asc' } })).toEqual(before);
    // A contradicting rating changes one session, and its person's score.
    const s = await t.prisma.session.findFirstOrThrow({
      where: { participant: { discordUserId: '100000000000000002' } },
      include: { ratings: true },
    });
    await t.prisma.session.update({
      where: { id: s.id },
      data: { evaluation: { update: { success: true, score: 1 } } },
    });
    const changed = await refreshQuality(t.prisma);
    expect(changed.participants).toBe(1);
    const q = await t.prisma.sessionQuality.findUniqueOrThrow({ where: { sessionId: s.id } });
    expect((q.signals as { ratingContradicts: boolean }).ratingContradicts).toBe(true);
  });
});
