// Per policy version, task kind and kind of collaborator (human or simulated): the figures of the report,
// accumulated in one streaming pass over the sessions (memory grows with groups and tasks, not with sessions).
import type { GateEvidence } from '../../trainer/promote.ts';
import { lastGateDecision } from './gate.ts';
import { collectExperiments, type ExperimentReport } from './experiments.ts';
import { collectTrainedVersions, type GroupKey, type GroupReport, type TrainedVersion } from './training-data.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import {
  resolvePolicyFilter,
  streamSessionSummaries,
  validateFilters,
  type ExportFilters,
  type SessionSummary,
} from '../export/query.ts';
import { histogramMedian, MeanAccumulator, wilson, type Interval } from '../../tasks/stats.ts';
import { isSimulatedSession } from '../../prisma/cohorts.ts';

export type { GroupReport } from './training-data.ts';

export interface ReportData {
  generatedAt: string;
  filters: ExportFilters;
  referencePolicy: string | null;
  groups: GroupReport[];
  /** The promotion gate's latest decision and its evidence (null: the gate has not run). */
  lastGate?: GateEvidence | null;
  /** A/B experiments with people, newest first (bot/report/experiments.ts). */
  experiments?: ExperimentReport[];
  /** The data each trained version learnt from (bot/report/training-data.ts). */
  trainedVersions?: TrainedVersion[];
}

const NO_POLICY = '(none)';

class Group {
  sessions = 0;
  answered = 0;
  evaluated = 0;
  successes = 0;
  score = new MeanAccumulator();
  ratingHistogram = [0, 0, 0, 0, 0];
  rating = new MeanAccumulator();
  turnHistogram: number[] = [];
  turns = new MeanAccumulator();
  /** Frontend: task id -> similarity sum and count, for the win rate. */
  perTask = new Map<string, { sum: number; n: number }>();
  constructor(
    readonly key: GroupKey,
    readonly policyCreatedAt: number,
  ) {}

  add(s: SessionSummary): void {
    this.sessions++;
    if (s.status === 'answered') this.answered++;
    if (s.evaluation) {
      this.evaluated++;
      if (s.evaluation.success) this.successes++;
      this.score.add(s.evaluation.score);
      if (this.key.kind === 'frontend') {
        const t = this.perTask.get(s.taskId) ?? { sum: 0, n: 0 };
        t.sum += s.evaluation.score;
        t.n++;
        this.perTask.set(s.taskId, t);
      }
    }
    for (const r of s.ratings) {
      if (r.value >= 1 && r.value <= 5) this.ratingHistogram[r.value - 1]!++;
      this.rating.add(r.value);
    }
    let agentTurns = 0;
    for (const t of s.turns) if (t.role === 'agent') agentTurns++;
    while (this.turnHistogram.length <= agentTurns) this.turnHistogram.push(0);
    this.turnHistogram[agentTurns]!++;
    this.turns.add(agentTurns);
  }
}

/** Pure accumulation, separate from the database so that it can be fed and tested directly. */
export class ReportAccumulator {
  private groups = new Map<string, Group>();

  add(s: SessionSummary): void {
    const key: GroupKey = {
      policy: s.policyVersion?.name ?? NO_POLICY,
      kind: s.task.kind,
      collaborator: isSimulatedSession(s, s.participant) ? 'simulated' : 'human',
    };
    const id = `${key.policy}\u0000${key.kind}\u0000${key.collaborator}`;
    let g = this.groups.get(id);
    if (!g) {
      g = new Group(key, s.policyVersion?.createdAt.getTime() ?? Number.POSITIVE_INFINITY);
      this.groups.set(id, g);
    }
    g.add(s);
  }

  /** referencePolicy: the policy frontend win rates compare against; default the oldest policy version seen. */
  finish(filters: ExportFilters, referencePolicy?: string, now = new Date()): ReportData {
    const all = [...this.groups.values()].sort(
      (a, b) =>
        a.policyCreatedAt - b.policyCreatedAt ||
        a.key.policy.localeCompare(b.key.policy) ||
        a.key.kind.localeCompare(b.key.kind) ||
        a.key.collaborator.localeCompare(b.key.collaborator),
    );
    const reference = referencePolicy ?? all.find((g) => g.key.policy !== NO_POLICY)?.key.policy ?? null;
    const groups = all.map((g): GroupReport => {
      let winRate: Interval | null = null;
      if (g.key.kind === 'frontend' && reference !== null && g.key.policy !== reference) {
        const ref = all.find(
          (r) => r.key.policy === reference && r.key.kind === 'frontend' && r.key.collaborator === g.key.collaborator,
        );
        if (ref) winRate = winRateAgainst(g.perTask, ref.perTask);
      }
      return {
        ...g.key,
        sessions: g.sessions,
        answered: g.answered,
        evaluated: g.evaluated,
        successRate: wilson(g.successes, g.evaluated),
        meanScore: g.score.interval(0.95, [0, 1]),
        winRate,
        ratings: { count: g.rating.n, histogram: g.ratingHistogram, mean: g.rating.interval(0.95, [1, 5]) },
        turns: {
          mean: g.turns.interval(0.95, [0, Number.POSITIVE_INFINITY]),
          median: histogramMedian(g.turnHistogram),
          histogram: g.turnHistogram,
        },
      };
    });
    return { generatedAt: now.toISOString(), filters, referencePolicy: reference, groups };
  }
}

/** Win rate over the tasks both policies were evaluated on: a task is won when the mean similarity is higher. */
export function winRateAgainst(
  mine: Map<string, { sum: number; n: number }>,
  theirs: Map<string, { sum: number; n: number }>,
): Interval {
  let wins = 0;
  let n = 0;
  for (const [task, m] of mine) {
    const t = theirs.get(task);
    if (!t) continue;
    n++;
    const a = m.sum / m.n;
    const b = t.sum / t.n;
    if (a > b) wins += 1;
    else if (a === b) wins += 0.5;
  }
  return wilson(wins, n);
}

/** Default selection of the report: every ended session, simulated ones included (they are most evaluations). */
export function reportFilters(f: ExportFilters): ExportFilters {
  const given = Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined)) as ExportFilters;
  return { statuses: ['answered', 'abandoned', 'expired'], source: 'both', ...given };
}

export async function collectReport(
  prisma: PrismaClient,
  filters: ExportFilters,
  referencePolicy?: string,
  now?: Date,
): Promise<ReportData> {
  const chosen = reportFilters(filters);
  validateFilters(chosen);
  const f = await resolvePolicyFilter(prisma, chosen);
  const acc = new ReportAccumulator();
  for await (const page of streamSessionSummaries(prisma, f)) for (const s of page) acc.add(s);
  return {
    ...acc.finish(f, referencePolicy, now),
    lastGate: await lastGateDecision(prisma),
    experiments: await collectExperiments(prisma),
    trainedVersions: await collectTrainedVersions(prisma),
  };
}
