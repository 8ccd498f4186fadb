// Promote only after a human A/B (PROMOTION_HUMAN_AB_SHARE): a candidate that passes the simulated gate is not
// deployed but starts an A/B experiment with people against the deployed version, as the arms of the default
// study (the same code as /mod experiment start), audited; while one runs, the next passing candidate is only
// kept, with the reason stored; a moderator's stop with promote then deploys it and the default study goes back
// to playing the deployed version. With nothing deployed there is no control arm, so the candidate is deployed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { runningExperiment, stopArms } from '../../prisma/experiment-store.ts';
import { findStudy } from '../../prisma/study-store.ts';
import { deployedPolicy } from '../../prisma/policy-store.ts';
import type { GameOutcome } from '../../trainer/evaluate.ts';
import { formatGateEvidence, promote, type PromoteOptions } from '../../trainer/promote.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.drop();
});

async function version(name: string) {
  return t.prisma.policyVersion.create({
    data: { name, algorithm: 'sweet', checkpointPath: `/nowhere/${name}`, checkpointSha256: '0'.repeat(64) },
  });
}

const repeat = (x: number, n: number) => new Array<number>(n).fill(x);
const games = (scores: number[]): GameOutcome[] =>
  scores.map((score, i) => ({ taskId: `t${i}`, score, success: score >= 1, agentTurns: 3 }));
// Every candidate but `worse` plays 10 of 20 games better than `z`: the gate says better (Wilcoxon p = 2/1024).
const scores = new Map([
  ['z', repeat(0.3, 20)],
  ['b', [...repeat(0.6, 10), ...repeat(0.3, 10)]],
  ['c', [...repeat(0.6, 10), ...repeat(0.3, 10)]],
  ['worse', [...repeat(0.1, 10), ...repeat(0.3, 10)]],
]);
const o: PromoteOptions = {
  gate: { alpha: 0.05, margin: 0 },
  kind: 'backend',
  play: async (v) => games(scores.get(v.name)!),
  humanAb: { share: 0.3 },
};

describe('promotion through a human A/B', () => {
  it('refuses a share outside (0, 1) before playing any game', async () => {
    await version('bad-share');
    let played = 0;
    await expect(
      promote(t.db, 'bad-share', { ...o, humanAb: { share: 1 }, play: async () => (played++, []) }),
    ).rejects.toThrow(/share must be in \(0, 1\)/);
    expect(played).toBe(0);
  });

  it('deploys with nothing deployed, starts an experiment instead of deploying, keeps a candidate while one runs, and a moderator promotes', async () => {
    // Nothing deployed: no control arm, so the first candidate is deployed as before.
    await version('z');
    const rz = await promote(t.db, 'z', o);
    expect(rz.decision).toBe('deployed');
    expect(rz.experiment).toBeUndefined();
    expect(await t.prisma.experiment.count()).toBe(0);

    // b passes the gate: not deployed, an experiment with people starts (candidate b, control z, 30%).
    const b = await version('b');
    const rb = await promote(t.db, 'b', o);
    expect(rb.evidence.verdict).toBe('better');
    expect(rb.decision).toBe('kept');
    expect((await deployedPolicy(t.prisma))!.name).toBe('z');
    expect((await t.prisma.policyVersion.findUniqueOrThrow({ where: { id: b.id } })).status).toBe('candidate');
    const study = (await findStudy(t.prisma, 'default'))!;
    const running = await runningExperiment(t.prisma, study.id);
    expect(running).toMatchObject({
      candidate: { name: 'b' },
      control: { name: 'z' },
      share: 30,
      startedBy: 'trainer',
      study: { name: 'default' },
    });
    // The A/B is the default study's arms: z at 70%, b at 30%, which bot/assign.ts assigns sessions by.
    expect(study.arms.map((a) => [a.policyVersion.name, a.share]).sort()).toEqual([
      ['b', 30],
      ['z', 70],
    ]);
    expect(rb.experiment!.id).toBe(running!.id);
    expect(rb.evidence.humanAb).toEqual({ share: 0.3, study: 'default', experimentId: running!.id });
    const storedB = (await t.prisma.policyVersion.findUniqueOrThrow({ where: { id: b.id } })).metrics as {
      gate: { decision: string; humanAb: { experimentId: string } };
    };
    expect(storedB.gate).toMatchObject({ decision: 'kept', humanAb: { experimentId: running!.id } });
    expect(formatGateEvidence(rb.evidence)).toMatch(
      /kept as a candidate b: better than the deployed version[\s\S]*A\/B experiment started in study default, b on 30% of each task's sessions/,
    );

    // c passes too, but an experiment is running: kept, and the reason says so. No second experiment.
    const c = await version('c');
    const rc = await promote(t.db, 'c', o);
    expect(rc.evidence.verdict).toBe('better');
    expect(rc.decision).toBe('kept');
    expect(rc.experiment).toBeUndefined();
    expect(rc.evidence.humanAb!.experimentId).toBeUndefined();
    expect(rc.evidence.humanAb!.notStarted).toMatch(/already running in study "default" \(candidate b\)/);
    expect(formatGateEvidence(rc.evidence)).toMatch(
      /no A\/B experiment started: An experiment is already running in study "default" \(candidate b\)/,
    );
    expect(await t.prisma.experiment.count()).toBe(1);
    expect((await t.prisma.policyVersion.findUniqueOrThrow({ where: { id: c.id } })).status).toBe('candidate');

    // A candidate the gate rejects starts nothing and carries no A/B note.
    await version('worse');
    const rw = await promote(t.db, 'worse', o);
    expect(rw.evidence.verdict).toBe('worse');
    expect(rw.evidence.humanAb).toBeUndefined();

    // An operator ends the experiment with promote: b is deployed, and the default study has no arms again.
    const stopped = await stopArms(t.db, 'moderator-1', 'default', { outcome: 'promote' });
    expect(stopped.deployed!.name).toBe('b');
    expect(stopped.experiment).toMatchObject({ status: 'stopped', outcome: 'promote', stoppedBy: 'moderator-1' });
    expect((await deployedPolicy(t.prisma))!.name).toBe('b');
    expect((await findStudy(t.prisma, 'default'))!.arms).toEqual([]);

    const log = await t.prisma.auditLog.findMany({ orderBy: { createdAt: 'asc' } });
    expect(log.map((x) => `${x.actor} ${x.action}:${x.target}`)).toEqual([
      'trainer policy.promote:z',
      'trainer experiment.start:b',
      'trainer policy.keep-candidate:b',
      'trainer policy.keep-candidate:c',
      'trainer policy.keep-candidate:worse',
      'moderator-1 experiment.promote:b',
      'moderator-1 experiment.stop:b',
    ]);
    expect(log[2]!.detail).toMatchObject({
      verdict: 'better',
      decision: 'kept',
      humanAb: { share: 0.3, experimentId: running!.id },
    });
    expect(log[3]!.detail).toMatchObject({ humanAb: { notStarted: expect.stringMatching(/already running/) } });
  });
});
