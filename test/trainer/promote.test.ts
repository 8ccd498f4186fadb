// The promotion gate deploys a candidate only with evidence: the paired comparison on the same games shows it
// better at alpha (or, with a margin, not worse beyond it); a tie keeps the deployed version. Manual deploy and
// rollback switch versions; every change is audited, with the gate's numbers, and announced.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import {
  formatGateEvidence,
  gamesPlan,
  gateLevel,
  gateVerdict,
  promote,
  type GateConfig,
} from '../../trainer/promote.ts';
import { comparePaired, type GameOutcome } from '../../trainer/evaluate.ts';
import { gateStatsLine, lastGateDecision } from '../../bot/report/gate.ts';
import { deployPolicyByName, rollbackPolicy } from '../../prisma/deployment-store.ts';
import { deployedPolicy } from '../../prisma/policy-store.ts';
import { POLICY_CHANNEL } from '../../prisma/deployment-store.ts';
import { TRAINER_LOCK_KEY, tryTrainerLock } from '../../trainer/service.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.drop();
});

async function version(name: string, status: 'candidate' | 'deployed' = 'candidate') {
  return t.prisma.policyVersion.create({
    data: {
      name,
      algorithm: 'sweet',
      checkpointPath: `/nowhere/${name}`,
      checkpointSha256: '0'.repeat(64),
      status,
      ...(status === 'deployed' ? { deployedAt: new Date() } : {}),
    },
  });
}

/** Games t0..t(n-1) with the given scores; success = every test passed. */
const games = (scores: number[]): GameOutcome[] =>
  scores.map((score, i) => ({ taskId: `t${i}`, score, success: score >= 1, agentTurns: 3 }));
const gate: GateConfig = { alpha: 0.05, margin: 0 };
const compare = (candidate: number[], deployed: number[], alpha = 0.05) =>
  comparePaired(
    { version: 'cand', games: games(candidate) },
    { version: 'dep', games: games(deployed) },
    { kind: 'backend', level: gateLevel(alpha), seed: 1 },
  );
const repeat = (x: number, n: number) => new Array<number>(n).fill(x);

describe('gate decisions on paired games', () => {
  it('better: higher on 12 of 30 games, equal on the rest (Wilcoxon exact p = 2/2^12) -> deploy', () => {
    const c = compare([...repeat(0.8, 12), ...repeat(0.5, 18)], repeat(0.5, 30));
    expect(c.score.wilcoxon.pValue).toBeCloseTo(2 / 4096, 12);
    expect(gateVerdict(c, gate)).toBe('better');
  });

  it('worse: the same games the other way round -> keep', () => {
    expect(gateVerdict(compare(repeat(0.5, 30), [...repeat(0.8, 12), ...repeat(0.5, 18)]), gate)).toBe('worse');
  });

  it('tie: mixed small differences, p far above alpha -> keep the deployed version', () => {
    const c = compare([0.6, 0.4, 0.5, 0.7, 0.3, 0.5, 0.5, 0.5], [0.5, 0.5, 0.5, 0.6, 0.4, 0.5, 0.5, 0.5]);
    expect(c.score.wilcoxon.pValue).toBeGreaterThan(0.5);
    expect(gateVerdict(c, gate)).toBe('tie');
  });

  it('non-inferior: 3 of 30 games 5 points lower is within a 5-point margin (but a tie without a margin)', () => {
    const c = compare([...repeat(0.45, 3), ...repeat(0.5, 27)], repeat(0.5, 30));
    // 3 non-zero differences, all negative: exact p = 2/8, not significant either way.
    expect(c.score.wilcoxon.pValue).toBeCloseTo(0.25, 12);
    expect(c.score.difference.estimate).toBeCloseTo(-0.005, 12);
    expect(c.score.difference.lo).toBeGreaterThan(-0.05);
    expect(gateVerdict(c, gate)).toBe('tie');
    expect(gateVerdict(c, { alpha: 0.05, margin: 0.05 })).toBe('non-inferior');
    // A margin narrower than the lower bound of the difference does not pass.
    expect(gateVerdict(c, { alpha: 0.05, margin: 0.001 })).toBe('tie');
  });

  it('worse on success outweighs better on score: significantly fewer successes keeps the candidate out', () => {
    // Deployed solves 8 games outright that the candidate only half solves; the candidate gains a little on 22.
    const deployed = [...repeat(1, 8), ...repeat(0.2, 22)];
    const candidate = [...repeat(0.5, 8), ...repeat(0.9, 22)];
    const c = compare(candidate, deployed);
    expect(c.success.mcnemar.pValue).toBeCloseTo(2 / 256, 12);
    expect(c.score.wilcoxon.pValue).toBeLessThan(0.05);
    expect(gateVerdict(c, gate)).toBe('worse');
    expect(gateVerdict(c, { alpha: 0.05, margin: 0.5 })).toBe('worse');
  });

  it('refuses games that are not the same, and a comparison at the wrong interval level for a margin', () => {
    expect(() =>
      comparePaired({ version: 'a', games: games([1, 0]) }, { version: 'b', games: games([1]) }, { kind: 'backend' }),
    ).toThrow(/same games/);
    const shifted = games([1, 0]).map((g, i) => ({ ...g, taskId: `u${i}` }));
    expect(() =>
      comparePaired({ version: 'a', games: games([1, 0]) }, { version: 'b', games: shifted }, { kind: 'backend' }),
    ).toThrow(/not the same games/);
    const at95 = comparePaired(
      { version: 'a', games: games([0.5, 0.4, 0.5]) },
      { version: 'b', games: games([0.5, 0.5, 0.5]) },
      { kind: 'backend' },
    );
    expect(() => gateVerdict(at95, { alpha: 0.05, margin: 0.1 })).toThrow(/level/);
  });
});

describe('how many games the gate plays', () => {
  const o = { effect: 0.1, alpha: 0.05, power: 0.8 };
  it("from the power analysis: the worst case with nothing known, the deployed version's measured success rate otherwise", () => {
    // Worst case 0.45 vs 0.55: 395 games (tasks/stats.ts test). Deployed at 5% success: 0.05 vs 0.15, psi = 0.185:
    // (1.959964 sqrt(0.185) + 0.841621 sqrt(0.175))^2 / 0.01 = 142.82 (scipy.stats.norm.ppf) -> 143.
    expect(gamesPlan(null, o).games).toBe(395);
    expect(gamesPlan({ metrics: { gate: { candidateSuccess: 0.05 } } }, o).games).toBe(143);
    expect(gamesPlan({ metrics: { training: {} } }, o).games).toBe(395);
  });
  it('--eval-episodes wins, and the plan still says what those games can detect', () => {
    const r = gamesPlan(null, o, 40);
    expect(r.games).toBe(40);
    expect(r.plan.games).toBe(395);
  });
});

describe('promotion gate with the database', () => {
  it('deploys a better candidate, keeps a tied and a worse one, stores the evidence, rolls back, and notifies the bot each time', async () => {
    const notes: string[] = [];
    const unlisten = await t.db.listen(POLICY_CHANNEL, (p) => notes.push(p));
    expect(await lastGateDecision(t.prisma)).toBeNull();
    const a = await version('a', 'deployed');
    const b = await version('b');
    const c = await version('c');
    await version('d');
    const scores = new Map([
      ['a', repeat(0.3, 20)],
      ['b', [...repeat(0.6, 10), ...repeat(0.3, 10)]],
      ['c', [...repeat(0.6, 10), ...repeat(0.3, 10)]],
      ['d', [...repeat(0.3, 19), 0.25]],
    ]);
    const play = async (v: { name: string }) => games(scores.get(v.name)!);
    const o = { gate, kind: 'backend' as const, play };

    const rb = await promote(t.db, 'b', o);
    expect(rb.decision).toBe('deployed');
    expect(rb.evidence.verdict).toBe('better');
    expect(rb.evidence.scoreDifference!.estimate).toBeCloseTo(0.15, 12);
    expect((await deployedPolicy(t.prisma))!.name).toBe('b');
    expect((await t.prisma.policyVersion.findUniqueOrThrow({ where: { id: a.id } })).status).toBe('retired');
    // The numbers behind the decision are on the version.
    const stored = (await t.prisma.policyVersion.findUniqueOrThrow({ where: { id: b.id } })).metrics as {
      gate: { verdict: string; games: number; scorePValue: number };
    };
    expect(stored.gate).toMatchObject({ verdict: 'better', games: 20 });
    expect(stored.gate.scorePValue).toBeCloseTo(2 / 1024, 12);
    // And the games one by one, task by task, the candidate's outcome beside the deployed version's.
    const played = (
      stored.gate as unknown as {
        played: {
          taskId: string;
          candidate: { score: number; sessionId: string | null };
          deployed: { score: number };
        }[];
      }
    ).played;
    expect(played).toHaveLength(20);
    expect(played[0]).toEqual({
      taskId: 't0',
      candidate: { score: 0.6, success: false, sessionId: null },
      deployed: { score: 0.3, success: false, sessionId: null },
    });
    expect(played[19]).toMatchObject({ taskId: 't19', candidate: { score: 0.3 }, deployed: { score: 0.3 } });

    // c plays exactly like the deployed b: a tie keeps b.
    const rc = await promote(t.db, 'c', o);
    expect(rc.decision).toBe('kept');
    expect(rc.evidence.verdict).toBe('tie');
    expect((await deployedPolicy(t.prisma))!.name).toBe('b');
    expect((await t.prisma.policyVersion.findUniqueOrThrow({ where: { id: c.id } })).status).toBe('candidate');
    expect(gateStatsLine(await lastGateDecision(t.prisma))).toMatch(/kept c \(tie vs b, 20 paired games/);
    expect(formatGateEvidence(rc.evidence)).toMatch(/no significant difference/);

    // d is worse than b on 10 games: kept.
    const rd = await promote(t.db, 'd', o);
    expect(rd.decision).toBe('kept');
    expect(rd.evidence.verdict).toBe('worse');

    const back = await rollbackPolicy(t.db, 'cli');
    expect(back.name).toBe('a');
    await deployPolicyByName(t.db, 'cli', 'b');
    expect((await deployedPolicy(t.prisma))!.name).toBe('b');
    await expect(deployPolicyByName(t.db, 'cli', 'b')).rejects.toThrow(/already deployed/);
    await expect(deployPolicyByName(t.db, 'cli', 'zzz')).rejects.toThrow(/no policy version/i);

    expect(await t.prisma.policyVersion.count({ where: { status: 'deployed' } })).toBe(1);
    const log = await t.prisma.auditLog.findMany({ orderBy: { createdAt: 'asc' } });
    expect(log.map((x) => `${x.action}:${x.target}`)).toEqual([
      'policy.promote:b',
      'policy.keep-candidate:c',
      'policy.keep-candidate:d',
      'policy.rollback:a',
      'policy.deploy:b',
    ]);
    expect(log[0]!.detail).toMatchObject({ verdict: 'better', decision: 'deployed', against: 'a', alpha: 0.05 });
    expect(log[2]!.detail).toMatchObject({ verdict: 'worse', decision: 'kept', against: 'b' });
    // Manual deploys are not gate decisions: the last one is still d's.
    expect((await lastGateDecision(t.prisma))!.candidate).toBe('d');
    await new Promise((r) => setTimeout(r, 300));
    await unlisten();
    expect(notes).toEqual([b.id, a.id, b.id]);
  });
});

describe('trainer lock', () => {
  it('lets one of two concurrent trainers in, and the other after release', async () => {
    const [x, y] = await Promise.all([tryTrainerLock(t.db), tryTrainerLock(t.db)]);
    expect([x, y].filter(Boolean)).toHaveLength(1);
    // Visible to Postgres as an advisory lock on the trainer's key.
    const held = await t.prisma.$queryRawUnsafe<{ n: bigint }[]>(
      `SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = ${TRAINER_LOCK_KEY}`,
    );
    expect(Number(held[0]!.n)).toBe(1);
    await (x ?? y)!.release();
    const z = await tryTrainerLock(t.db);
    expect(z).not.toBeNull();
    await z!.release();
  });
});
