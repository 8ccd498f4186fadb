// Calibration: the simulated collaborator measured against people. ColBench assumes an LLM (or our rule-based
// simulator) can stand in for the person who asked; these pure functions say how a session went, the same way for
// a person's session and for a simulated game, and compare the two paired by task (bot/report/calibration.ts
// plays the games and reads people's sessions; `sweetloop study calibrate` prints the result).
//
// Metrics of one session:
// - success, score: the evaluation (backend: all tests pass, share of tests passed; frontend: the similarity).
// - agentTurns: the agent's messages, the answer included.
// - replyChars: mean length of the collaborator's replies, in characters.
// - dontKnowShare: share of replies that say the collaborator does not know ("I don't know", "not sure", "no idea").
// - factsPerReply: distinct facts of the hidden information stated in the replies, over the number of replies.
//   Backend facts are the reference's literals a question can be about: its numbers (0 and 1 aside: every loop and
//   counter has them) and its quoted strings, less what the public description already says; a number counts in
//   any form a person says it (15, 0.15 or 15%). Frontend facts are the words the target page shows and the colours
//   its classes name, less the description's words.
// - referencePasted: 1 when the replies paste the hidden reference (tasks/quality.ts, the same rule that flags a
//   person's session), else 0.
import { isPasted, numberForms, numbersIn, referencePaste } from './quality.ts';
import { pageColours, stripTags } from './html-facts.ts';
import { keywords } from './words.ts';
import { formatPercent, meanIntervalOf, wilsonCount, type Interval } from './stats.ts';

export interface CalibrationSession {
  kind: 'backend' | 'frontend';
  /** The hidden reference the collaborator sees (backend: the function; frontend: the page). */
  reference: string;
  description: string;
  turns: readonly { role: 'agent' | 'human'; content: string }[];
  evaluation: { score: number; success: boolean };
}

export const METRICS = [
  { name: 'success', label: 'success', share: true },
  { name: 'score', label: '% tests passed / similarity', share: true },
  { name: 'agentTurns', label: 'agent turns', share: false },
  { name: 'replyChars', label: 'reply length (chars)', share: false },
  { name: 'dontKnowShare', label: 'share of "I don\'t know"', share: true },
  { name: 'factsPerReply', label: 'hidden facts given per reply', share: false },
  { name: 'referencePasted', label: 'sessions pasting the reference', share: true },
] as const;

export type MetricName = (typeof METRICS)[number]['name'];

/** A session's metrics; NaN where a metric has no value (no replies: no reply length, share or facts per reply). */
export type SessionMetrics = Record<MetricName, number>;

const DONT_KNOW = /\b(?:i\s+(?:do\s+not|don['’]?t|dont)\s+know|dunno|idk|no idea|not sure|can['’]?t say)\b/i;

/** The reply says the collaborator does not know (wholly or in part). */
export function saysDontKnow(reply: string): boolean {
  return DONT_KNOW.test(reply);
}

export type HiddenFact =
  | { type: 'number'; value: number }
  | { type: 'phrase'; text: string }
  | { type: 'word'; word: string };

/** Lower case, "_" and "-" read as spaces, white space collapsed: "HIGH_risk" and "high risk" are one phrase. */
function plain(text: string): string {
  return text.toLowerCase().replace(/[_-]+/g, ' ').replace(/\s+/g, ' ').trim();
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The facts of the hidden information a reply can give away, less what the description says (see the header). */
export function hiddenFacts(kind: CalibrationSession['kind'], reference: string, description: string): HiddenFact[] {
  if (kind === 'frontend') {
    const shown = new Set(keywords(description));
    const words = keywords(`${stripTags(reference)} ${pageColours(reference).join(' ')}`).filter(
      (w) => (w.length >= 3 || /^\d/.test(w)) && !shown.has(w),
    );
    return [...new Set(words)].map((word) => ({ type: 'word', word }));
  }
  const code = reference.replace(/("""|''')[\s\S]*?\1/g, ' ');
  const strings = [...code.matchAll(/'([^'\\\n]*)'|"([^"\\\n]*)"/g)].map((m) => plain(m[1] ?? m[2] ?? ''));
  const publicText = plain(description);
  const phrases = [...new Set(strings)].filter((p) => p.length >= 2 && /[a-z0-9]/.test(p) && !publicText.includes(p));
  const publicNumbers = new Set(numbersIn(description).flatMap((n) => numberForms(Math.abs(n))));
  // Identifiers (x2, h1) hold digits that are no number; strings were counted as phrases.
  const bare = code.replace(/'[^'\\\n]*'|"[^"\\\n]*"/g, ' ').replace(/[A-Za-z_]\w*/g, ' ');
  const numbers = [...new Set(numbersIn(bare).map(Math.abs))].filter(
    (n) => n !== 0 && n !== 1 && !publicNumbers.has(n),
  );
  return [
    ...numbers.map((value) => ({ type: 'number' as const, value })),
    ...phrases.map((text) => ({ type: 'phrase' as const, text })),
  ];
}

/** Indexes (into `facts`) of the facts a reply states. */
export function factsStated(facts: readonly HiddenFact[], reply: string): number[] {
  const said = new Set(numbersIn(reply).map(Math.abs));
  const text = plain(reply);
  const words = new Set(keywords(reply));
  const out: number[] = [];
  facts.forEach((f, i) => {
    const stated =
      f.type === 'number'
        ? numberForms(f.value).some((v) => said.has(v))
        : f.type === 'word'
          ? words.has(f.word)
          : new RegExp(`(?:^|[^a-z0-9])${escapeRegExp(f.text)}(?:[^a-z0-9]|$)`).test(text);
    if (stated) out.push(i);
  });
  return out;
}

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, x) => a + x, 0) / xs.length : NaN);

export function sessionMetrics(s: CalibrationSession): SessionMetrics {
  const replies = s.turns.filter((t) => t.role === 'human').map((t) => t.content);
  const facts = hiddenFacts(s.kind, s.reference, s.description);
  const given = new Set(replies.flatMap((r) => factsStated(facts, r)));
  return {
    success: s.evaluation.success ? 1 : 0,
    score: s.evaluation.score,
    agentTurns: s.turns.filter((t) => t.role === 'agent').length,
    replyChars: mean(replies.map((r) => r.length)),
    dontKnowShare: replies.length ? replies.filter(saysDontKnow).length / replies.length : NaN,
    factsPerReply: replies.length ? given.size / replies.length : NaN,
    referencePasted: isPasted(referencePaste(s.kind, s.reference, s.description, replies)) ? 1 : 0,
  };
}

// ------------------------------------------------------------------------------------------- paired by task

export interface CalibrationRow {
  metric: MetricName;
  label: string;
  share: boolean;
  /** Mean over the paired tasks of each task's mean (people's sessions, the simulator's games), with its interval over tasks. */
  people: Interval;
  simulator: Interval;
  /** people - simulator: the mean of the per-task differences, with its Student-t interval over tasks (shares' clipped to [-1, 1]). */
  difference: Interval;
  /** Tasks with a value on both sides. */
  tasks: number;
}

export interface TaskMetrics {
  taskId: string;
  metrics: SessionMetrics;
}

function taskMeans(sessions: readonly TaskMetrics[], metric: MetricName): Map<string, number> {
  const by = new Map<string, number[]>();
  for (const s of sessions) {
    const v = s.metrics[metric];
    if (Number.isFinite(v)) by.set(s.taskId, [...(by.get(s.taskId) ?? []), v]);
  }
  return new Map([...by].map(([task, vs]) => [task, mean(vs)]));
}

/**
 * People against the simulator, paired by task: for each metric, each task's mean over people's sessions less its
 * mean over the simulator's games, and the mean of those differences with an interval over tasks (tasks, not
 * sessions, are the independent units: a task's sessions share its difficulty).
 */
export function calibrationRows(
  people: readonly TaskMetrics[],
  simulator: readonly TaskMetrics[],
  level = 0.95,
): CalibrationRow[] {
  return METRICS.map((m) => {
    const p = taskMeans(people, m.name);
    const s = taskMeans(simulator, m.name);
    const tasks = [...p.keys()].filter((t) => s.has(t)).sort();
    // At a few tasks a t interval leaves the scale the values live on: shares stay in [0, 1], the rest above 0.
    const side: [number, number] = m.share ? [0, 1] : [0, Infinity];
    return {
      metric: m.name,
      label: m.label,
      share: m.share,
      people: meanIntervalOf(
        tasks.map((t) => p.get(t)!),
        level,
        side,
      ),
      simulator: meanIntervalOf(
        tasks.map((t) => s.get(t)!),
        level,
        side,
      ),
      difference: meanIntervalOf(
        tasks.map((t) => p.get(t)! - s.get(t)!),
        level,
        m.share ? [-1, 1] : undefined,
      ),
      tasks: tasks.length,
    };
  });
}

// ------------------------------------------------------------------------------------------- leak rate

/**
 * The leak rate of one side: the share of its sessions whose collaborator replies contain the reference's code, by
 * the referencePasted metric (tasks/quality.ts's detector, the one that flags a person's session), with a Wilson
 * interval over sessions. Unpaired and over every session, unlike the rows above: a simulator that hands the agent
 * the reference (an LLM that sees it and is pushed to) shows here even on tasks people never answered.
 */
export interface LeakRate {
  sessions: number;
  leaked: number;
  rate: Interval;
}

export function leakRate(sessions: readonly Pick<TaskMetrics, 'metrics'>[], level = 0.95): LeakRate {
  const measured = sessions.filter((s) => Number.isFinite(s.metrics.referencePasted));
  const leaked = measured.filter((s) => s.metrics.referencePasted === 1).length;
  return { sessions: measured.length, leaked, rate: wilsonCount(leaked, measured.length, level) };
}

/** "2.8% [0.5%, 14.2%] (1 of 36 sessions)"; "-" without sessions. */
export function formatLeakRate(l: LeakRate): string {
  if (l.sessions === 0) return '- (no sessions)';
  return `${formatPercent(l.rate).replace(/(-?\d+\.\d)/g, '$1%')} (${l.leaked} of ${l.sessions} sessions)`;
}

/** A value as the table shows it: shares in percent, the rest with two decimals; "-" for none. */
export function formatValue(v: number, share: boolean, signed = false): string {
  if (!Number.isFinite(v)) return '-';
  const text = share ? `${(100 * v).toFixed(1)}%` : v.toFixed(2);
  return signed && v >= 0 ? `+${text}` : text;
}

export function formatDifference(row: Pick<CalibrationRow, 'difference' | 'share'>): string {
  const d = row.difference;
  const est = formatValue(d.estimate, row.share, true);
  if (!Number.isFinite(d.lo)) return est;
  return `${est} [${formatValue(d.lo, row.share, true)}, ${formatValue(d.hi, row.share, true)}]`;
}

/** The table `study calibrate` prints: metric, people, simulator, difference [95% CI], tasks paired. */
export function formatCalibrationTable(rows: readonly CalibrationRow[]): string {
  const table = [
    ['metric', 'people', 'simulator', 'people - simulator [95% CI]', 'tasks'],
    ...rows.map((r) => [
      r.label,
      formatValue(r.people.estimate, r.share),
      formatValue(r.simulator.estimate, r.share),
      formatDifference(r),
      String(r.tasks),
    ]),
  ];
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  return table
    .map((row) => row.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '))
    .join('\n');
}
