// The credit benchmark's tables (README.md, "What it prints"): greedy paths, move probabilities state by state,
// sampled success and score with what each method's training did, and the critic gate. Pure: rows in, lines out.
// Policies are merged into one line only when they played the same greedy game on every task (sameGreedyGames):
// an equal aggregate never passes for the same play.
import {
  CANONICAL_STATES,
  formatGreedyTable,
  type GreedySummary,
  type PairReading,
  type PlayedGame,
} from '../../tasks/credit-states.ts';
import type { CreditDesign } from '../../tasks/credit.ts';
import type { SampledSummary } from './evaluate.ts';
import type { CriticGate, StateReading } from './states.ts';

export interface PolicyRow {
  policy: string;
  greedy: GreedySummary;
  greedyGames: readonly PlayedGame[];
  sampled: SampledSummary;
  states: StateReading;
  effort: Record<string, { updates: number; lrSum: number }>;
  note?: string;
}

const pct = (x: number) => (Number.isFinite(x) ? (x * 100).toFixed(1) : '-');

/** Greedy play (tasks/credit-states.ts formatGreedyTable: merged only where the games are the same). */
export function greedyTable(rows: readonly PolicyRow[], design: CreditDesign): string[] {
  return formatGreedyTable(
    rows.map((r) => ({ policy: r.policy, games: r.greedyGames })),
    design,
  );
}

/** Each policy's probability of each move class in each canonical state (and how much of its mass that covers). */
export function statesTable(rows: readonly Pick<PolicyRow, 'policy' | 'states'>[]): string[] {
  const lines = [
    "move probabilities % by state (useful / repeated / useless / answer; covered = mass on the demonstrator's messages);",
    '  key contrast: log P(ask a key | its value not told) - log P(same | told), 0 when keys are chosen by name alone;',
    '  repeats after 2 values: % asking again the key told first / last (avoiding only the last key repeats the first);',
    '  useful after 2 values by the key left to ask (a state read for some keys only shows as unequal shares):',
  ];
  lines.push(
    `  ${'policy'.padEnd(18)} ${CANONICAL_STATES.map((s) => s.padEnd(30)).join(' ')} key contrast (nats)  repeats after 2  useful after 2 by key left`,
  );
  for (const r of rows) {
    const cells = CANONICAL_STATES.map((s) => {
      const p = r.states.byState[s];
      return `${[p.useful, p.repeated, p.useless, p.answer].map((x) => (x * 100).toFixed(0)).join('/')} (${(p.covered * 100).toFixed(0)})`.padEnd(
        30,
      );
    });
    const { earlier, last } = r.states.repeatAfterTwo;
    lines.push(
      `  ${r.policy.padEnd(18)} ${cells.join(' ')} ${r.states.keyContrast.toFixed(3).padEnd(20)} ${`${(earlier * 100).toFixed(0)} / ${(last * 100).toFixed(0)}`.padEnd(16)} ${Object.entries(
        r.states.usefulAfterTwoByKey,
      )
        .map(([k, u]) => `${k} ${(u * 100).toFixed(0)}`)
        .join(', ')}`,
    );
  }
  return lines;
}

/** Sampled success and score (task the unit) and what training did: updates and summed learning rate a phase. */
export function sampledTable(rows: readonly PolicyRow[]): string[] {
  const lines = [
    'sampled at temperature 1: policy | success % [95 %, tasks the unit] | score % [95 %] | games | training: phase updates (sum of lr)',
  ];
  for (const r of rows) {
    const effort =
      Object.entries(r.effort)
        .map(([ph, e]) => `${ph} ${e.updates} (${e.lrSum.toPrecision(3)})`)
        .join(', ') || '-';
    const s = r.sampled;
    lines.push(
      `  ${r.policy.padEnd(18)} ${`${pct(s.success.estimate)} [${pct(s.success.lo)}, ${pct(s.success.hi)}]`.padEnd(22)} ${`${pct(s.score.estimate)} [${pct(s.score.lo)}, ${pct(s.score.hi)}]`.padEnd(22)} ${String(s.games).padEnd(6)} ${effort}${r.note ? `  <- ${r.note}` : ''}`,
    );
  }
  return lines;
}

/** The gate's threshold: below it SWEET-RL's actor result is not read as credit assignment. */
export const GATE_THRESHOLD = 0.75;

/**
 * Whether a critic passes: each kind of pair at the threshold, not only their pooled accuracy. A critic that ranks the
 * answer right once every value is told and useful against repeated by key name (0.5) pools to 0.75 while assigning no
 * credit to questions (bench/HISTORY.md, "Design v4").
 */
export const gatePasses = (g: CriticGate): boolean =>
  g.withinStateAccuracy >= GATE_THRESHOLD && weakestKind(g) >= GATE_THRESHOLD;

/** The lower accuracy of the gate's two kinds of pair (a kind with no pairs left out): what the grid chooses by. */
export const weakestKind = (g: CriticGate): number =>
  Math.min(...Object.values(g.byKind).flatMap((k) => (k.pairs > 0 ? [k.accuracy] : [])));

export function gateLines(label: string, g: CriticGate): string[] {
  const verdict = gatePasses(g) ? 'passes' : 'FAILS';
  const ms = CANONICAL_STATES.filter((s) => s !== 'first message')
    .map(
      (s) =>
        `${s}: ${Object.entries(g.meanScore[s])
          .map(([m, v]) => `${m} ${v!.toFixed(2)}`)
          .join(', ')}`,
    )
    .join('; ');
  return [
    `critic gate (${label}): within-state pair accuracy ${g.withinStateAccuracy.toFixed(3)} over ${g.pairs} pairs, ${verdict} (each kind >= ${GATE_THRESHOLD}); useful over repeated ${g.byKind.usefulOverRepeated.accuracy.toFixed(3)} (${g.byKind.usefulOverRepeated.pairs}), answer over asking again ${g.byKind.answerOverQuestion.accuracy.toFixed(3)} (${g.byKind.answerOverQuestion.pairs}); score key contrast ${g.keyContrast.toFixed(3)} (0 by key name)`,
    `  mean ranking score by move: ${ms}`,
  ];
}

// The actor's pairs by state (tasks/credit-states.ts readPairs): what the candidates gave a policy to learn from.
/** One line: pairs by values told, after 2 values the chosen key left, and how the true values order them. */
export function pairReadingLine(r: PairReading): string {
  const fmt = (o: Record<string, number>) =>
    Object.entries(o)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
  const t = r.byTrueValues;
  return `${r.pairs} pairs by values told before the move: ${fmt(r.byValuesTold)}; after 2 values, the key left chosen: ${fmt(r.usefulChosenAfterTwoByKey) || 'none'}; by the true move values: agree ${t.agree}, tie ${t.tie}, against ${t.against}`;
}
