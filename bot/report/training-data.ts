// The report's "trained on" section: which data each trained version learnt from (people, simulators or both, and
// the filter: TrainingRun.config.data), and how versions trained on human data compare with versions trained on
// simulated data, pooled over their evaluated sessions, separately with people and with simulated collaborators.
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { ERASED_DATA_MARK, trainedOnErasedData } from '../../prisma/policy-store.ts';
import type { DataFilter } from '../../trainer/data.ts';
import type { DataSource } from '../../prisma/data-source.ts';
import type { RunConfig } from '../../trainer/runs.ts';
import { wilsonCount, type Interval } from '../../tasks/stats.ts';
import { compareProportions, type Difference } from '../../tasks/two-sample.ts';

/** The report's groups (bot/report/aggregate.ts): a policy version, a task kind, a kind of collaborator. */
export type Collaborator = 'human' | 'simulated';

export interface GroupKey {
  policy: string;
  kind: 'backend' | 'frontend';
  collaborator: Collaborator;
}

export interface GroupReport extends GroupKey {
  sessions: number;
  answered: number;
  evaluated: number;
  /** Share of evaluated sessions that succeeded (backend: all tests passed). */
  successRate: Interval;
  /** Backend: mean fraction of tests passed. Frontend: mean similarity. */
  meanScore: Interval;
  /** Frontend only: share of tasks where this policy's mean similarity beats the reference policy's (ties 1/2). */
  winRate: Interval | null;
  ratings: { count: number; histogram: number[]; mean: Interval };
  /** Agent turns per session (the protocol allows at most 10). */
  turns: { mean: Interval; median: number; histogram: number[] };
}

export interface TrainedVersion {
  policy: string;
  algorithm: string;
  source: DataSource;
  filter: DataFilter;
  sessions: { human: number; simulated: number } | null;
  /** Trained on sessions of a person whose data was deleted since (prisma/policy-store.ts trainedOnErasedData). */
  trainedOnErasedData: boolean;
}

export interface SourceComparison {
  collaborator: Collaborator;
  human: Interval;
  simulated: Interval;
  /** Versions trained on human data minus versions trained on simulated data (success rate). */
  difference: Difference;
}

export async function collectTrainedVersions(prisma: PrismaClient): Promise<TrainedVersion[]> {
  const rows = await prisma.policyVersion.findMany({
    where: { trainingRunId: { not: null } },
    include: { trainingRun: true },
    orderBy: { createdAt: 'asc' },
  });
  return rows.map((v) => {
    // Every stored run names its data (runs from before the filter: prisma/migrations/*_run_data_source).
    const cfg = v.trainingRun!.config as unknown as Pick<RunConfig, 'data'>;
    const snap = (v.trainingRun?.dataSnapshot ?? {}) as { counts?: { human: number; simulated: number } };
    return {
      policy: v.name,
      algorithm: v.algorithm,
      source: cfg.data.source,
      filter: cfg.data,
      sessions: snap.counts ? { human: snap.counts.human, simulated: snap.counts.simulated } : null,
      trainedOnErasedData: trainedOnErasedData(v),
    };
  });
}

/** Pooled success of the versions trained on each source, with each kind of collaborator, and the difference. */
export function compareSources(
  versions: readonly TrainedVersion[],
  groups: readonly GroupReport[],
): SourceComparison[] {
  const sourceOf = new Map(versions.map((v) => [v.policy, v.source]));
  const out: SourceComparison[] = [];
  for (const collaborator of ['human', 'simulated'] as const) {
    const pooled = (source: DataSource) => {
      let k = 0;
      let n = 0;
      for (const g of groups) {
        if (g.collaborator !== collaborator || sourceOf.get(g.policy) !== source || g.evaluated === 0) continue;
        k += Math.round(g.successRate.estimate * g.evaluated);
        n += g.evaluated;
      }
      return { k, n };
    };
    const h = pooled('human');
    const s = pooled('simulated');
    if (h.n === 0 && s.n === 0) continue;
    out.push({
      collaborator,
      human: wilsonCount(h.k, h.n),
      simulated: wilsonCount(s.k, s.n),
      difference: compareProportions(h.k, h.n, s.k, s.n),
    });
  }
  return out;
}

const pct = (v: number) => (Number.isFinite(v) ? `${(100 * v).toFixed(1)}%` : '-');
const ci = (i: Interval) =>
  Number.isFinite(i.lo)
    ? `${pct(i.estimate)} [${pct(i.lo)}, ${pct(i.hi)}] (n=${i.n})`
    : `${pct(i.estimate)} (n=${i.n})`;

export function trainingDataMarkdown(
  versions: readonly TrainedVersion[],
  comparisons: readonly SourceComparison[],
): string {
  const filter = (f: DataFilter) =>
    [
      f.source === 'both' && f.simulatedWeight < 1 ? `simulated weight ${f.simulatedWeight}` : '',
      f.minQuality !== undefined ? `quality >= ${f.minQuality}` : '',
      f.minRating !== undefined ? `rating >= ${f.minRating}` : '',
    ]
      .filter(Boolean)
      .join(', ') || '-';
  const lines = [
    '## Trained on people or simulators',
    '',
    ...(versions.some((v) => v.trainedOnErasedData)
      ? [
          `${ERASED_DATA_MARK}: trained on sessions of a person whose data was deleted since; deployed only with an operator's force.`,
          '',
        ]
      : []),
    '| version | algorithm | trained on | sessions used (human / simulated) | filter |',
    '| --- | --- | --- | --- | --- |',
    ...versions.map(
      (v) =>
        `| ${v.trainedOnErasedData ? `${v.policy} ${ERASED_DATA_MARK}` : v.policy} | ${v.algorithm} | ${v.source} | ${v.sessions ? `${v.sessions.human} / ${v.sessions.simulated}` : '-'} | ${filter(v.filter)} |`,
    ),
  ];
  if (comparisons.length) {
    lines.push(
      '',
      'Success of the versions trained on human data against those trained on simulated data, pooled over their evaluated',
      "sessions (Wilson intervals; the difference with Newcombe's interval and Fisher's exact test):",
      '',
      '| played with | trained on human data | trained on simulated data | difference | p |',
      '| --- | --- | --- | --- | --- |',
      ...comparisons.map((c) => {
        const d = c.difference.difference;
        const diff = Number.isFinite(d.estimate)
          ? `${(100 * d.estimate).toFixed(1)} pts${Number.isFinite(d.lo) ? ` [${(100 * d.lo).toFixed(1)}, ${(100 * d.hi).toFixed(1)}]` : ''}`
          : '-';
        return `| ${c.collaborator === 'human' ? 'people' : 'simulated collaborators'} | ${ci(c.human)} | ${ci(c.simulated)} | ${diff} | ${Number.isFinite(c.difference.pValue) ? c.difference.pValue.toFixed(3) : '-'} |`;
      }),
    );
  }
  return lines.join('\n') + '\n';
}
