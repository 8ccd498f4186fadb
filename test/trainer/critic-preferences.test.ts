// People's pairwise preferences as extra Bradley-Terry pairs for the SWEET-RL critic: a stored judgement that
// contradicts the rewards adds the pair the person chose (checked on the pairs the critic of a real run trains
// on, critic-pairs.json), the run's snapshot records exactly which preferences it used (only those between two
// of its sessions, decisive, by a consenting rater), a run with preferences off records and uses none, and a
// rater who withdraws after the snapshot takes their judgement out of a resumed run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TestDatabase } from '../../testing/database.ts';
import { criticPairs, type CriticExample } from '../../trainer/critic.ts';
import { loadTrajectories, type Trajectory } from '../../trainer/data.ts';
import { trainConfig } from '../../trainer/presets.ts';
import { createRun, executeRun, RunInterrupted, type RunConfig } from '../../trainer/runs.ts';
import { runWorld } from './fixture.ts';

let t: TestDatabase;
let root: string;
let policyDir: string;
let fromId: string;
let data: Trajectory[];
/** Per task (in a fixed order): its best and worst session by reward, for tasks whose two rewards differ. */
let tasks: { best: Trajectory; worst: Trajectory }[];

beforeAll(async () => {
  ({ t, root, policyDir, fromId } = await runWorld('critic-prefs'));
  data = await loadTrajectories(t.prisma, { ratingWeight: 0, source: 'both' });
  const byTask = new Map<string, Trajectory[]>();
  for (const d of data) byTask.set(d.taskId, [...(byTask.get(d.taskId) ?? []), d]);
  tasks = [...byTask.keys()]
    .sort()
    .map((k) => [...byTask.get(k)!].sort((a, b) => b.reward - a.reward))
    .filter((g) => g[0]!.reward > g[g.length - 1]!.reward)
    .map((g) => ({ best: g[0]!, worst: g[g.length - 1]! }));
}, 240_000);

afterAll(async () => {
  await t?.drop();
  if (root) rmSync(root, { recursive: true, force: true });
});

function config(preferences: boolean): RunConfig {
  return {
    algorithm: 'sweet',
    preset: 'cpu-small',
    train: trainConfig('cpu-small', {
      batchSize: 2,
      microBatch: 2,
      criticEpochs: 2,
      actorEpochs: 1,
      checkpointEvery: 2,
      candidates: 4,
      pairsPerState: 2,
      stateFraction: 0.5,
      maxNewTokens: 24,
      seed: 3,
    }),
    fromVersionId: fromId,
    fromVersionName: 'tiny',
    fromCheckpoint: policyDir,
    kind: 'backend',
    ratingWeight: 0,
    data: { source: 'both', simulatedWeight: 1, seed: 3 },
    preferences,
  };
}

async function rater(name: string, o: { withdrawn?: boolean } = {}) {
  return t.prisma.participant.create({
    data: {
      discordUserId: name,
      displayName: name,
      consentGivenAt: new Date(),
      ...(o.withdrawn ? { consentWithdrawnAt: new Date() } : {}),
    },
  });
}

async function prefer(raterId: string, a: string, b: string, choice: 'a' | 'b' | 'tie') {
  return t.prisma.preference.create({
    data: { raterId, sessionAId: a, sessionBId: b, choice, answeredAt: new Date() },
  });
}

type Snapshot = { sessions: { id: string }[]; preferences?: { id: string; chosen: string; rejected: string }[] };
const pairsFile = (dir: string) =>
  JSON.parse(readFileSync(join(dir, 'critic-pairs.json'), 'utf8')) as {
    chosen: string;
    rejected: string;
    from: 'rewards' | 'people';
  }[];

describe("criticPairs with people's pairs", () => {
  // Only session ids matter for which pairs are made; the encoded sequences are not read.
  const examples = () => data.map((d) => ({ sessionId: d.sessionId }) as unknown as CriticExample);
  const ids = (ps: ReturnType<typeof criticPairs>) =>
    ps.map((p) => `${p.from}:${p.chosen.sessionId}>${p.rejected.sessionId}`);

  it("adds the pairs people chose after the rewards' pairs, in content order, capped per task, ignoring pairs it cannot use", () => {
    expect(tasks.length).toBeGreaterThanOrEqual(2);
    const [x, y] = tasks as [(typeof tasks)[0], (typeof tasks)[0]];
    const rewardsOnly = criticPairs(data, examples(), 4);
    expect(rewardsOnly.every((p) => p.from === 'rewards')).toBe(true);
    expect(rewardsOnly.map((p) => `${p.chosen.sessionId}>${p.rejected.sessionId}`)).toContain(
      `${x.best.sessionId}>${x.worst.sessionId}`,
    );

    const people = [
      { chosen: x.worst.sessionId, rejected: x.best.sessionId }, // contradicts the rewards
      { chosen: y.best.sessionId, rejected: y.worst.sessionId }, // agrees with them
      { chosen: x.best.sessionId, rejected: y.worst.sessionId }, // two different tasks: not comparable
      { chosen: x.best.sessionId, rejected: '00000000-0000-0000-0000-000000000000' }, // not in the data
    ];
    const withPeople = criticPairs(data, examples(), 4, people);
    expect(ids(withPeople).slice(0, rewardsOnly.length)).toEqual(ids(rewardsOnly));
    const added = ids(withPeople).slice(rewardsOnly.length);
    expect([...added].sort()).toEqual(
      [`people:${x.worst.sessionId}>${x.best.sessionId}`, `people:${y.best.sessionId}>${y.worst.sessionId}`].sort(),
    );
    // The order does not depend on the order the judgements came in.
    expect(ids(criticPairs(data, examples(), 4, [...people].reverse()))).toEqual(ids(withPeople));
    // Each judgement counts: two people agreeing give two pairs; the cap per task bounds them.
    const twice = [people[0]!, people[0]!];
    expect(ids(criticPairs(data, examples(), 4, twice)).filter((s) => s.startsWith('people:'))).toHaveLength(2);
    expect(ids(criticPairs(data, examples(), 1, twice)).filter((s) => s.startsWith('people:'))).toHaveLength(1);
  });
});

describe("a SWEET-RL run with people's preferences", () => {
  it('records the usable preferences in its snapshot and gives the critic the pair the person chose', async () => {
    const [x, y] = tasks as [(typeof tasks)[0], (typeof tasks)[0]];
    const dana = await rater('dana');
    const gone = await rater('gone', { withdrawn: true });
    // Dana judges the session that scored worse on x more helpful: against the rewards.
    const contradicting = await prefer(dana.id, x.best.sessionId, x.worst.sessionId, 'b');
    await prefer(dana.id, y.best.sessionId, y.worst.sessionId, 'tie'); // no order
    await prefer(gone.id, y.worst.sessionId, y.best.sessionId, 'a'); // rater withdrew
    // A judgement involving a session outside the run's data (flagged) is not the run's.
    const z = tasks[2] ?? y;
    await t.prisma.moderationFlag.create({ data: { sessionId: z.worst.sessionId, reason: 'test: out of the data' } });
    await prefer(dana.id, z.worst.sessionId, z.best.sessionId, 'a');

    const off = await createRun({ prisma: t.prisma, checkpointRoot: join(root, 'off') }, config(false));
    expect((off.dataSnapshot as Snapshot).preferences).toBeUndefined();

    const said: string[] = [];
    const ctx = {
      prisma: t.prisma,
      checkpointRoot: join(root, 'on'),
      progress: 'none' as const,
      log: (l: string) => said.push(l),
    };
    const run = await createRun(ctx, config(true));
    const snapshot = run.dataSnapshot as Snapshot;
    expect(snapshot.sessions.map((s) => s.id)).not.toContain(z.worst.sessionId);
    expect(snapshot.preferences).toEqual([
      { id: contradicting.id, chosen: x.worst.sessionId, rejected: x.best.sessionId },
    ]);

    // One critic update is enough to see which pairs the critic trains on.
    await expect(executeRun({ ...ctx, stopAfterSteps: 1 }, run.id)).rejects.toBeInstanceOf(RunInterrupted);
    const pairs = pairsFile(run.checkpointDir!);
    expect(pairs.filter((p) => p.from === 'people')).toEqual([
      { chosen: x.worst.sessionId, rejected: x.best.sessionId, from: 'people' },
    ]);
    // The rewards still say the opposite; the person's pair is extra signal, not a replacement.
    expect(pairs).toContainEqual({ chosen: x.best.sessionId, rejected: x.worst.sessionId, from: 'rewards' });
    expect(said.join('\n')).toMatch(/critic: \d+ trajectory pairs from \d+ sessions \(1 from people's preferences\)/);

    // Dana withdraws before the run resumes: her judgement leaves the critic's pairs, and the log says so.
    await t.prisma.participant.update({ where: { id: dana.id }, data: { consentWithdrawnAt: new Date() } });
    await expect(executeRun({ ...ctx, stopAfterSteps: 1 }, run.id)).rejects.toBeInstanceOf(RunInterrupted);
    expect(pairsFile(run.checkpointDir!).filter((p) => p.from === 'people')).toEqual([]);
    expect(said.join('\n')).toMatch(/1 preference\(s\) of the snapshot no longer hold/);
  }, 600_000);
});
