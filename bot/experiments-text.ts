// An A/B comparison shown as text (Discord, the CLI, the report), apart from bot/experiments.ts, which computes it.
import type { RunningExperiment } from '../prisma/experiment-store.ts';
import { markedName } from '../prisma/policy-store.ts';
import type { Interval } from '../tasks/stats.ts';
import type { Difference } from '../tasks/two-sample.ts';
import type { ArmComparison, ArmsStatus, PairedDifference } from './experiments.ts';

const pct = (v: number) => `${(100 * v).toFixed(1)}%`;
const num = (v: number) => v.toFixed(2);

function interval(i: Interval, f: (v: number) => string): string {
  if (!Number.isFinite(i.estimate)) return '—';
  if (!Number.isFinite(i.lo)) return `${f(i.estimate)} (n=${i.n})`;
  return `${f(i.estimate)} [${f(i.lo)}, ${f(i.hi)}]`;
}

function difference(d: Difference, f: (v: number) => string): string {
  const e = d.difference;
  if (!Number.isFinite(e.estimate)) return 'difference: not enough data';
  const signed = (v: number) => (v >= 0 ? '+' : '') + f(v);
  const ci = Number.isFinite(e.lo) ? ` [${signed(e.lo)}, ${signed(e.hi)}]` : '';
  const p = Number.isFinite(d.pValue)
    ? `, p=${d.pValue < 0.001 ? d.pValue.toExponential(1) : d.pValue.toFixed(3)} (${d.test === 'fisher-exact' ? 'Fisher' : 'Welch t'})`
    : '';
  return `difference ${signed(e.estimate)}${ci}${p}`;
}

/** The rows of a comparison: [label, control, candidate, difference]. */
export function comparisonRows(c: ArmComparison): [string, string, string, string][] {
  const scoreLabel = c.kind === 'backend' ? '% tests passed' : 'similarity';
  const scoreFmt = c.kind === 'backend' ? pct : (v: number) => v.toFixed(3);
  const pts = (v: number) => `${(100 * v).toFixed(1)} pts`;
  return [
    [
      'success',
      interval(c.control.success, pct),
      interval(c.candidate.success, pct),
      difference(c.differences.success, pts),
    ],
    [
      scoreLabel,
      interval(c.control.score, scoreFmt),
      interval(c.candidate.score, scoreFmt),
      difference(c.differences.score, c.kind === 'backend' ? pts : (v) => v.toFixed(3)),
    ],
    [
      'rating',
      interval(c.control.rating, num),
      interval(c.candidate.rating, num),
      difference(c.differences.rating, num),
    ],
    [
      'agent turns',
      interval(c.control.turns, num),
      interval(c.candidate.turns, num),
      difference(c.differences.turns, num),
    ],
    [
      'abandoned',
      interval(c.control.abandonment, pct),
      interval(c.candidate.abandonment, pct),
      difference(c.differences.abandonment, pts),
    ],
  ];
}

/** The paired-by-task line of a comparison: the differences within tasks both arms played, with Wilcoxon's p. */
export function pairedLine(c: ArmComparison): string {
  if (c.paired.tasks === 0) return 'paired by task: no task was played (and scored) in both arms yet';
  const pts = (v: number) => `${(100 * v).toFixed(1)} pts`;
  const one = (label: string, d: PairedDifference, f: (v: number) => string) => {
    const e = d.difference;
    const signed = (v: number) => (v >= 0 ? '+' : '') + f(v);
    const ci = Number.isFinite(e.lo) ? ` [${signed(e.lo)}, ${signed(e.hi)}]` : '';
    const p = Number.isFinite(d.pValue)
      ? `, p=${d.pValue < 0.001 ? d.pValue.toExponential(1) : d.pValue.toFixed(3)}`
      : '';
    return `${label} ${signed(e.estimate)}${ci}${p}`;
  };
  const score =
    c.kind === 'backend'
      ? one('% tests passed', c.paired.score, pts)
      : one('similarity', c.paired.score, (v) => v.toFixed(3));
  return `paired by task (${c.paired.tasks} task(s) played in both arms): success ${one('', c.paired.success, pts).trim()}; ${score} (Wilcoxon signed-rank)`;
}

export function describeExperiment(e: RunningExperiment): string {
  const when = e.stoppedAt
    ? `stopped ${e.stoppedAt.toISOString().slice(0, 16)} (${e.outcome})`
    : `running since ${e.startedAt.toISOString().slice(0, 16)}`;
  return `Experiment ${e.id.slice(0, 8)} in study **${e.study.name}**: candidate **${markedName(e.candidate)}** vs control **${markedName(e.control)}**, ${e.share}% of each task's sessions on the candidate; ${when} UTC.`;
}

/** The status as text (Discord, the CLI): per kind, each arm's figures with 95% intervals and the differences with p-values. */
export function formatArmsStatus(st: ArmsStatus): string {
  const arms = st.study.arms.map((a) => `${markedName(a.policyVersion)} ${a.share}%`).join(', ');
  const lines = [
    st.experiment
      ? describeExperiment(st.experiment)
      : st.study.arms.length > 1
        ? `Study **${st.study.name}** compares its arms: ${arms}.`
        : `Study **${st.study.name}** compares no arms (${arms || 'the deployed version'} plays it) and has had no experiment. Start one with /mod experiment start or sweetloop study arms start.`,
  ];
  if (st.experiment && st.experiment.status !== 'running')
    lines.push(`Study **${st.study.name}** is now played by ${arms || 'the deployed version'}.`);
  if (comparisonsEmpty(st)) lines.push('No session has been played in it yet.');
  for (const c of st.comparisons) {
    lines.push(
      '',
      `**${c.kind}** — control ${c.control.version}: ${c.control.sessions} session(s) (${c.control.ended} ended), candidate ${c.candidate.version}: ${c.candidate.sessions} session(s) (${c.candidate.ended} ended)`,
    );
    for (const [label, control, candidate, diff] of comparisonRows(c))
      lines.push(`${label}: control ${control} · candidate ${candidate} · ${diff}`);
    lines.push(pairedLine(c));
  }
  if (st.comparisons.length)
    lines.push(
      '',
      '95% intervals: Wilson (proportions), Student t (means); differences are candidate minus control (Newcombe / Welch; within tasks: t interval).',
    );
  return lines.join('\n');
}

const comparisonsEmpty = (st: ArmsStatus) =>
  st.comparisons.length === 0 && (st.experiment !== null || st.study.arms.length > 1);
