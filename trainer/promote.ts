// The trainer's promotion gate, with evidence. The candidate and the deployed version play the same held-out
// games (tasks, seeds, collaborator); `gateVerdict` reads the paired comparison (trainer/evaluate.ts):
//   better        the candidate is significantly better (p < alpha) on score (Wilcoxon) or success (McNemar),
//                 and significantly worse on neither                                              -> deploy
//   non-inferior  only with a margin > 0: the one-sided (1 - alpha) lower bound of the score difference
//                 (bootstrap) is above -margin, and success is not significantly worse            -> deploy
//   worse         significantly worse on either metric                                             -> keep
//   tie           anything else: no evidence either way                                            -> keep
// A tie keeps the deployed version: redeploying needs evidence. With a human A/B share configured
// (PROMOTION_HUMAN_AB_SHARE), a candidate the simulated gate would deploy is not deployed: it stays a candidate
// and an A/B experiment with people starts in the default study, as its arms (prisma/experiment-store.ts, the
// same code as /mod experiment start and `sweetloop study arms start`), which an operator ends with
// `/mod experiment stop promote|discard` or `sweetloop study arms stop`; while another experiment runs there, the candidate is only kept. The numbers
// behind each decision are stored on the candidate (PolicyVersion.metrics.gate) and in the audit log. Deploy and rollback themselves (one deployed
// version, retire the previous, audit log, NOTIFY policy_deployed) live in prisma/deployment-store.ts.
import type { Database } from '../prisma/db.ts';
import type { PolicyVersion, Prisma } from '../prisma/generated/client.ts';
import { deployedPolicy } from '../prisma/policy-store.ts';
import { assertDeployable, recordGateEvidence, switchDeployedPolicy } from '../prisma/deployment-store.ts';
import { ExperimentError, startExperiment, type RunningExperiment } from '../prisma/experiment-store.ts';
import { DEFAULT_STUDY } from '../prisma/study-store.ts';
import type { TaskKind } from '../tasks/model.ts';
import { type Interval } from '../tasks/stats.ts';
import { pairedSuccessGames, type PairedSuccessPlan } from '../tasks/sample-size.ts';
import { comparePaired, formatDifference, formatP, type GameOutcome, type PairedComparison } from './evaluate.ts';

export interface GateConfig {
  /** Significance level of the paired tests (PROMOTION_ALPHA). */
  alpha: number;
  /** Non-inferiority margin on the score (fraction of tests passed / similarity); 0: the candidate must be better. */
  margin: number;
}

export type GateVerdict = 'better' | 'non-inferior' | 'tie' | 'worse';

/** Everything the decision rests on, as stored on the version and in the audit log (plain JSON numbers). */
export interface GateEvidence {
  verdict: GateVerdict | 'nothing-deployed';
  decision: 'deployed' | 'kept';
  candidate: string;
  against: string | null;
  kind: TaskKind;
  games: number;
  /** Distinct tasks among the games (older evidence lacks it): when fewer than the games, the tests are over tasks. */
  tasks?: number;
  alpha: number;
  margin: number;
  /** Candidate's and deployed version's success rate and score (95% intervals not stored: the level is 1 - 2 alpha). */
  candidateSuccess?: number;
  deployedSuccess?: number;
  candidateScore?: number;
  deployedScore?: number;
  /** Candidate minus deployed, with the one-sided (1 - alpha) bounds as a (1 - 2 alpha) interval. */
  scoreDifference?: Interval;
  successDifference?: Interval;
  scorePValue?: number;
  successPValue?: number;
  /** McNemar's discordant games: candidate-only and deployed-only successes. */
  candidateOnlySuccesses?: number;
  deployedOnlySuccesses?: number;
  /** How the games count was chosen, when it was (power analysis of the paired success comparison). */
  plan?: PairedSuccessPlan;
  /**
   * Set when the gate passed but promotion waits for people (PROMOTION_HUMAN_AB_SHARE): the experiment started
   * in `study` with the candidate on `share` (a fraction) of each task's sessions, or why none could start (one
   * already running). Evidence stored before studies has no `study`.
   */
  humanAb?: { share: number; study?: string; experimentId?: string; notStarted?: string };
  /**
   * The games one by one, in the order played: each task with the candidate's and the deployed version's outcome
   * (and session, when the games were stored). Evidence stored before this has none.
   */
  played?: PlayedGame[];
  decidedAt: string;
}

export interface PlayedGame {
  taskId: string;
  candidate: { score: number; success: boolean; sessionId: string | null };
  deployed: { score: number; success: boolean; sessionId: string | null };
}

/** The paired games as the evidence keeps them (index i of both lists is one game: comparePaired checked that). */
export function playedGames(candidate: readonly GameOutcome[], deployed: readonly GameOutcome[]): PlayedGame[] {
  const side = (g: GameOutcome) => ({ score: g.score, success: g.success, sessionId: g.sessionId ?? null });
  return candidate.map((g, i) => ({ taskId: g.taskId, candidate: side(g), deployed: side(deployed[i]!) }));
}

/** The interval level the gate uses: its bounds are the one-sided (1 - alpha) bounds. */
export const gateLevel = (alpha: number) => 1 - 2 * alpha;

/** The gate's rule, alone, on a paired comparison whose A is the candidate and B the deployed version. */
export function gateVerdict(c: PairedComparison, g: GateConfig): GateVerdict {
  if (!(g.alpha > 0 && g.alpha < 0.5)) throw new RangeError(`gate: alpha must be in (0, 0.5), got ${g.alpha}`);
  if (!(g.margin >= 0)) throw new RangeError(`gate: margin must be >= 0, got ${g.margin}`);
  // Directions are those of the tests themselves: W+ against W- for the score, discordant games for success.
  const w = c.score.wilcoxon;
  const m = c.success.mcnemar;
  const scoreSig = w.pValue < g.alpha;
  const successSig = m.pValue < g.alpha;
  const worse = (scoreSig && w.wPlus < w.wMinus) || (successSig && m.aOnly < m.bOnly);
  const better = (scoreSig && w.wPlus > w.wMinus) || (successSig && m.aOnly > m.bOnly);
  const worseSuccess = successSig && m.aOnly < m.bOnly;
  if (better && !worse) return 'better';
  if (g.margin > 0 && !worseSuccess) {
    // The lower bound of a (1 - 2 alpha) interval is the one-sided (1 - alpha) bound non-inferiority needs.
    if (Math.abs(c.level - gateLevel(g.alpha)) > 1e-9)
      throw new Error(`gate: the comparison's intervals are at level ${c.level}; the gate needs ${gateLevel(g.alpha)}`);
    if (c.score.difference.lo > -g.margin) return 'non-inferior';
  }
  return worse ? 'worse' : 'tie';
}

export function gateEvidence(
  c: PairedComparison,
  g: GateConfig,
  plan?: PairedSuccessPlan,
  now = new Date(),
): GateEvidence {
  const verdict = gateVerdict(c, g);
  return {
    verdict,
    decision: verdict === 'better' || verdict === 'non-inferior' ? 'deployed' : 'kept',
    candidate: c.a.version,
    against: c.b.version,
    kind: c.kind,
    games: c.games,
    tasks: c.tasks,
    alpha: g.alpha,
    margin: g.margin,
    candidateSuccess: c.a.success.estimate,
    deployedSuccess: c.b.success.estimate,
    candidateScore: c.a.score.estimate,
    deployedScore: c.b.score.estimate,
    scoreDifference: c.score.difference,
    successDifference: c.success.difference,
    scorePValue: c.score.wilcoxon.pValue,
    successPValue: c.success.mcnemar.pValue,
    candidateOnlySuccesses: c.success.mcnemar.aOnly,
    deployedOnlySuccesses: c.success.mcnemar.bOnly,
    ...(plan ? { plan } : {}),
    decidedAt: now.toISOString(),
  };
}

/**
 * The games the gate plays: `episodes` when given, otherwise as many as McNemar's test needs to detect `effect`
 * in success rate at `alpha` with `power`. The discordance assumes independent games at the deployed version's
 * success rate as the gate last measured it (stored in its metrics.gate), or the worst case when unknown.
 */
export function gamesPlan(
  deployed: Pick<PolicyVersion, 'metrics'> | null,
  o: { effect: number; alpha: number; power: number },
  episodes?: number,
): { games: number; plan: PairedSuccessPlan } {
  const recorded = (deployed?.metrics as { gate?: { candidateSuccess?: unknown } } | null)?.gate?.candidateSuccess;
  const baseline = typeof recorded === 'number' && Number.isFinite(recorded) ? recorded : undefined;
  const plan = pairedSuccessGames({
    delta: o.effect,
    alpha: o.alpha,
    power: o.power,
    ...(baseline !== undefined ? { baseline } : {}),
  });
  return { games: episodes ?? plan.games, plan };
}

export interface PromotionResult {
  decision: 'deployed' | 'kept';
  candidate: PolicyVersion;
  deployedBefore: PolicyVersion | null;
  evidence: GateEvidence;
  comparison: PairedComparison | null;
  /** The A/B experiment with people the candidate went to instead of being deployed. */
  experiment?: RunningExperiment;
}

export interface PromoteOptions {
  gate: GateConfig;
  kind: TaskKind;
  /** Plays the held-out games with a version: the same games (tasks, seeds, collaborator) for every version. */
  play: (v: PolicyVersion) => Promise<GameOutcome[]>;
  /** How the games count was chosen, stored with the evidence. */
  plan?: PairedSuccessPlan;
  /** Seed of the bootstrap intervals. */
  seed?: number;
  actor?: string;
  /**
   * Promote only after a human A/B: a candidate that passes the gate starts an experiment against the deployed
   * version in the default study, with `share` (in (0, 1), to the percent) of each task's sessions, instead of
   * being deployed. Unset: deploy.
   */
  humanAb?: { share: number };
}

/**
 * Plays the candidate and the deployed version on the same games and deploys the candidate when the gate says
 * so, or with `humanAb` starts an A/B experiment with people instead. With nothing deployed, the candidate is
 * deployed (there is nothing to compare with).
 */
export async function promote(db: Database, candidateName: string, o: PromoteOptions): Promise<PromotionResult> {
  const actor = o.actor ?? 'trainer';
  const abPercent = o.humanAb ? Math.round(o.humanAb.share * 100) : 0;
  if (o.humanAb && !(abPercent >= 1 && abPercent <= 99))
    throw new RangeError(`promote: the human A/B share must be in (0, 1), from 1% to 99%, got ${o.humanAb.share}`);
  const candidate = await db.prisma.policyVersion.findUnique({ where: { name: candidateName } });
  if (!candidate) throw new Error(`no policy version named "${candidateName}"`);
  if (candidate.status === 'deployed') throw new Error(`"${candidateName}" is already deployed`);
  // The gate never forces: a candidate trained on erased data is refused before any game is played, with the rule's
  // own words (prisma/deployment-store.ts), which say how an operator can deploy it all the same.
  assertDeployable(candidate, {});
  const deployedBefore = await deployedPolicy(db.prisma);
  let comparison: PairedComparison | null = null;
  let evidence: GateEvidence;
  if (deployedBefore) {
    const games = { candidate: await o.play(candidate), deployed: await o.play(deployedBefore) };
    comparison = comparePaired(
      { version: candidate.name, games: games.candidate },
      { version: deployedBefore.name, games: games.deployed },
      { kind: o.kind, level: gateLevel(o.gate.alpha), seed: o.seed ?? 1 },
    );
    evidence = { ...gateEvidence(comparison, o.gate, o.plan), played: playedGames(games.candidate, games.deployed) };
  } else {
    evidence = {
      verdict: 'nothing-deployed',
      decision: 'deployed',
      candidate: candidate.name,
      against: null,
      kind: o.kind,
      games: 0,
      alpha: o.gate.alpha,
      margin: o.gate.margin,
      decidedAt: new Date().toISOString(),
    };
  }
  // With nothing deployed there is no control arm: the candidate is deployed as before.
  let experiment: RunningExperiment | undefined;
  if (o.humanAb && evidence.decision === 'deployed' && deployedBefore) {
    evidence = { ...evidence, decision: 'kept', humanAb: { share: o.humanAb.share, study: DEFAULT_STUDY } };
    try {
      experiment = await startExperiment(db, actor, {
        study: DEFAULT_STUDY,
        candidate: candidate.name,
        share: abPercent,
      });
      evidence.humanAb!.experimentId = experiment.id;
    } catch (err) {
      // Another experiment running (or starting at this moment) is the expected case; anything else is a fault.
      if (!(err instanceof ExperimentError)) throw err;
      evidence.humanAb!.notStarted = err.message;
    }
  }
  const json = JSON.parse(JSON.stringify(evidence)) as Prisma.InputJsonObject; // NaN bounds become null
  await recordGateEvidence(db.prisma, actor, candidate, json, evidence.decision);
  if (evidence.decision === 'kept') {
    return { decision: 'kept', candidate, deployedBefore, evidence, comparison, ...(experiment ? { experiment } : {}) };
  }
  const v = await switchDeployedPolicy(db, actor, candidate, 'policy.promote', { detail: json });
  return { decision: 'deployed', candidate: v, deployedBefore, evidence, comparison };
}

const VERDICT_TEXT: Record<GateEvidence['verdict'], string> = {
  better: 'better than the deployed version',
  'non-inferior': 'not worse than the deployed version beyond the margin',
  tie: 'no significant difference (a tie keeps the deployed version)',
  worse: 'worse than the deployed version',
  'nothing-deployed': 'nothing was deployed to compare with',
};

/** The decision and the numbers behind it, for the CLI, the report and /mod stats. */
export function formatGateEvidence(e: GateEvidence): string {
  const head = `${e.decision === 'deployed' ? 'deployed' : 'kept as a candidate'} ${e.candidate}: ${VERDICT_TEXT[e.verdict]}`;
  const ab = !e.humanAb
    ? []
    : e.humanAb.experimentId
      ? [
          `  promotion waits for people: A/B experiment started${e.humanAb.study ? ` in study ${e.humanAb.study}` : ''}, ${e.candidate} on ${Math.round(e.humanAb.share * 100)}% of each task's sessions; an operator ends it with /mod experiment stop or sweetloop study arms stop (promote or discard)`,
        ]
      : [`  promotion waits for people, but no A/B experiment started: ${e.humanAb.notStarted}`];
  if (e.verdict === 'nothing-deployed' || !e.scoreDifference || !e.successDifference) return [head, ...ab].join('\n');
  const pct = (x: number | undefined) => (x === undefined || x === null ? '-' : `${(x * 100).toFixed(1)}%`);
  const level = `${Math.round(gateLevel(e.alpha) * 100)}%`;
  const metric = e.kind === 'backend' ? 'tests passed' : 'similarity';
  return [
    head,
    `  ${e.games} paired games${e.tasks !== undefined && e.tasks < e.games ? ` of ${e.tasks} tasks (tests over tasks)` : ''} against ${e.against}, alpha ${e.alpha}${e.margin > 0 ? `, non-inferiority margin ${(e.margin * 100).toFixed(1)} points` : ''}`,
    `  ${metric}: ${pct(e.candidateScore)} vs ${pct(e.deployedScore)}, difference ${formatDifference(e.scoreDifference)} points (${level} interval), Wilcoxon ${formatP(e.scorePValue!)}`,
    `  success: ${pct(e.candidateSuccess)} vs ${pct(e.deployedSuccess)}, difference ${formatDifference(e.successDifference)} points, McNemar ${formatP(e.successPValue!)} (${e.candidateOnlySuccesses} vs ${e.deployedOnlySuccesses} discordant games)`,
    ...ab,
  ].join('\n');
}
