// The report's A/B section: every experiment with real people (an A/B period of a study, running or stopped),
// each kind of task it played with each arm's success, % tests passed / similarity, rating, turns and
// abandonment (95% intervals), the difference between the arms with its p-value, and the same paired by task.
// The figures come from bot/experiments.ts, as /mod experiment status shows them.
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { allExperiments, armSessions } from '../../prisma/experiment-store.ts';
import { markedName } from '../../prisma/policy-store.ts';
import { compareExperiment, type ArmComparison } from '../experiments.ts';
import { comparisonRows, pairedLine } from '../experiments-text.ts';

export interface ExperimentReport {
  id: string;
  study: string;
  candidate: string;
  control: string;
  /** The candidate's share of each task's sessions, in percent. */
  share: number;
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
      study: e.study.name,
      candidate: markedName(e.candidate),
      control: markedName(e.control),
      share: e.share,
      status: e.status,
      outcome: e.outcome,
      startedAt: e.startedAt.toISOString(),
      stoppedAt: e.stoppedAt?.toISOString() ?? null,
      comparisons: compareExperiment(await armSessions(prisma, { experimentId: e.id }), {
        control: e.control,
        candidate: e.candidate,
      }),
    });
  }
  return out;
}

const cell = (s: string) => s.replace(/\|/g, '\\|');

export function experimentsMarkdown(list: readonly ExperimentReport[]): string {
  const lines = [
    '## A/B experiments with people',
    '',
    "During an experiment the study's arms were the control and the candidate: each task's sessions were split between",
    'them in their shares (bot/assign.ts), blind to the person. Intervals are 95% (Wilson for proportions, Student t for',
    "means); differences are candidate minus control with Newcombe's interval and Fisher's exact test (proportions) or",
    "Welch's t (means); paired by task, the mean of the within-task differences over the tasks both arms played, with",
    "Wilcoxon's signed-rank test. The filters above do not apply to this section.",
  ];
  for (const e of list) {
    const state =
      e.status === 'running' ? `running since ${e.startedAt}` : `${e.startedAt} to ${e.stoppedAt} (${e.outcome})`;
    lines.push(
      '',
      `### ${e.candidate} vs ${e.control}`,
      '',
      `Experiment ${e.id} in study ${e.study}: ${e.share}% of each task's sessions on the candidate; ${state}.`,
    );
    if (e.comparisons.length === 0) lines.push('', 'No session was played in it.');
    for (const c of e.comparisons) {
      lines.push(
        '',
        `${c.kind}: control ${c.control.sessions} session(s), candidate ${c.candidate.sessions} session(s).`,
        '',
        '| measure | control | candidate | difference (candidate - control) |',
        '| --- | --- | --- | --- |',
        ...comparisonRows(c).map((r) => `| ${r.map(cell).join(' | ')} |`),
        '',
        `${pairedLine(c)}.`,
      );
    }
  }
  return lines.join('\n') + '\n';
}
