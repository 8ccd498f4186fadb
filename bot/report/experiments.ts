// The report's A/B section: every experiment with real people (running or stopped), each kind of task it played
// with each arm's success, % tests passed / similarity, rating, turns and abandonment (95% intervals) and the
// difference between the arms with its p-value. The figures come from bot/experiments.ts, as /mod experiment
// status shows them.
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { allExperiments, experimentSessions } from '../../prisma/experiment-store.ts';
import { compareExperiment, comparisonRows, type ArmComparison } from '../experiments.ts';

export interface ExperimentReport {
  id: string;
  candidate: string;
  control: string;
  share: number;
  seed: number;
  status: 'running' | 'stopped';
  outcome: string | null;
  startedAt: string;
  stoppedAt: string | null;
  comparisons: ArmComparison[];
}

export async function collectExperiments(prisma: PrismaClient): Promise<ExperimentReport[]> {
  const out: ExperimentReport[] = [];
  for (const e of await allExperiments(prisma)) {
    out.push({
      id: e.id,
      candidate: e.candidate.name,
      control: e.control.name,
      share: e.share,
      seed: e.seed,
      status: e.status,
      outcome: e.outcome,
      startedAt: e.startedAt.toISOString(),
      stoppedAt: e.stoppedAt?.toISOString() ?? null,
      comparisons: compareExperiment(await experimentSessions(prisma, e.id)),
    });
  }
  return out;
}

const cell = (s: string) => s.replace(/\|/g, '\\|');

export function experimentsMarkdown(list: readonly ExperimentReport[]): string {
  const lines = [
    '## A/B experiments with people',
    '',
    'Each new session of an experiment was played by the candidate with the given share, by the control otherwise,',
    'assigned at random per session in permuted blocks per task, blind to the person. Intervals are 95% (Wilson for',
    'proportions, Student t for means); differences are candidate minus control with Newcombe\'s interval and Fisher\'s',
    'exact test (proportions) or Welch\'s t (means). The filters above do not apply to this section.',
  ];
  for (const e of list) {
    const state = e.status === 'running' ? `running since ${e.startedAt}` : `${e.startedAt} to ${e.stoppedAt} (${e.outcome})`;
    lines.push('', `### ${e.candidate} vs ${e.control}`, '', `Experiment ${e.id}: ${Math.round(e.share * 100)}% of new sessions on the candidate, seed ${e.seed}; ${state}.`);
    if (e.comparisons.length === 0) lines.push('', 'No session was played in it.');
    for (const c of e.comparisons) {
      lines.push(
        '',
        `${c.kind}: control ${c.control.sessions} session(s), candidate ${c.candidate.sessions} session(s).`,
        '',
        '| measure | control | candidate | difference (candidate - control) |',
        '| --- | --- | --- | --- |',
        ...comparisonRows(c).map((r) => `| ${r.map(cell).join(' | ')} |`),
      );
    }
  }
  return lines.join('\n') + '\n';
}
