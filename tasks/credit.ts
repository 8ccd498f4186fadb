// The credit-assignment task family (bench/credit/README.md): the hidden information holds K values the answer
// needs, the collaborator answers at most K questions and only from the hidden information, so every wasted
// question costs a value and the optimum (ask each needed key once, then answer) is known exactly. Tasks are
// ordinary backend tasks (a Python function returning a dict; one test call a key), so storage, training and
// the sandboxed evaluator treat them as any other; `scoreCreditAnswer` is the same score in TypeScript.
import type { ChatMessage, Collaborator } from './agent.ts';
import { fnv1a } from './library.ts';
import type { TaskRecord } from './model.ts';
import { ANSWER_MARKER, MAX_AGENT_TURNS, parseAgentMessage } from './protocol.ts';
import { Rng } from './random.ts';
import type { EvaluationOutcome, Scorer } from './scorer.ts';

export const CREDIT_KEYS = [
  'speed',
  'size',
  'depth',
  'width',
  'height',
  'weight',
  'count',
  'limit',
  'delay',
  'rate',
  'scale',
  'level',
] as const;
/** Needed values a task; also the collaborator's question budget before v7 (creditBudgets). */
export const CREDIT_K = 3;
export const NO_MORE = 'No more questions: please answer now.';
export const DONT_KNOW_CREDIT = "I don't know.";
export const CREDIT_EVALUATOR_VERSION = 'credit-1';
/**
 * The family's designs (bench/credit/README.md): v1, keys drawn per task and the answer's dict scored; v2, the
 * same K keys in every task and the values obtained in the dialogue scored (no copying needed); v3, v2's tasks
 * with a demonstrator that asks its useful questions in a random order and double-checks a random told key, so
 * that which key a question names says nothing about the move's value; v4, one table row while values are
 * missing (an untold key always likelier than a told one); v5, v4 with an answer that writes no values
 * (creditAnswer), so the answer's text says nothing of the outcome; v6, v5 with a demonstrator that asks again
 * half the time once nothing more can be obtained (credit-demonstrator.ts demonstratorMix); v7, v6 with a budget
 * drawn per game from K to K + 2 and told to no one (creditBudgets), so a game with a wasted question can still
 * get every value. Each builds on the one before, so a rule reads "since v4" (designSince).
 */
export type CreditDesign = 'v1' | 'v2' | 'v3' | 'v4' | 'v5' | 'v6' | 'v7';
export const CREDIT_DESIGNS: readonly CreditDesign[] = ['v1', 'v2', 'v3', 'v4', 'v5', 'v6', 'v7'];
/** Whether `design` has what `since` introduced (every design keeps the changes of those before it). */
export const designSince = (design: CreditDesign, since: CreditDesign): boolean =>
  CREDIT_DESIGNS.indexOf(design) >= CREDIT_DESIGNS.indexOf(since);
/** v2 and v3 share their tasks and score: every task the same K keys, the values obtained in the game scored. */
export const fixedKeys = (design: CreditDesign): boolean => design !== 'v1';
/** v2's keys: the pool's first K. */
export const CREDIT_V2_KEYS: readonly string[] = CREDIT_KEYS.slice(0, CREDIT_K);

export interface CreditTask {
  keys: string[];
  values: number[];
}

/** The hidden information of a task as its reference function. */
export function creditReference(t: CreditTask): string {
  return `def settings():\n    return {${t.keys.map((k, i) => `"${k}": ${t.values[i]}`).join(', ')}}`;
}

export function creditDescription(keys: readonly string[], design: CreditDesign = 'v1'): string {
  const list = keys.length > 1 ? `${keys.slice(0, -1).join(', ')} and ${keys[keys.length - 1]}` : keys[0];
  const budgets = creditBudgets(design, keys.length);
  const budget = budgets.length === 1 ? `${budgets[0]}` : `between ${budgets[0]} and ${budgets[budgets.length - 1]}`;
  return `I need settings() for my machine. It returns a dict with the keys ${list}. I can answer ${budget} questions. The signature of the function is: def settings():`;
}

/**
 * The question budgets a game can have, each as likely: K before v7; since v7 K to K + 2, drawn per game and told
 * to no one, so a successful game may hold wasted questions (bench/credit/README.md, "Design v7").
 */
export function creditBudgets(design: CreditDesign, k = CREDIT_K): number[] {
  return designSince(design, 'v7') ? [k, k + 1, k + 2] : [k];
}

/**
 * Game `game`'s budget on a task: drawn from the task's reference and the game's place in its run, so game i of
 * every policy on the same tasks meets the same budget (common random numbers), whatever order the games run in.
 */
export function creditGameBudget(reference: string, game: number, design: CreditDesign): number {
  const budgets = creditBudgets(design, parseCreditReference(reference).keys.length);
  return budgets[Math.floor(Rng.derive(fnv1a(reference), 'credit-budget', game).next() * budgets.length)]!;
}

/** Reads keys and values back from a task's reference (the collaborator and scorer see only that). */
export function parseCreditReference(reference: string): CreditTask {
  const keys: string[] = [];
  const values: number[] = [];
  for (const m of reference.matchAll(/"([a-z]+)":\s*(-?\d+)/g)) {
    keys.push(m[1]!);
    values.push(Number(m[2]));
  }
  if (!/^def settings\(\):/.test(reference) || keys.length === 0) throw new Error('not a credit-family task reference');
  return { keys, values };
}

/** Held-out key sets: the unordered set hashes into the test fifth, so held-out sets never occur in training. */
export function creditSplit(keys: readonly string[]): 'train' | 'test' {
  return fnv1a([...keys].sort().join(',')) % 5 === 0 ? 'test' : 'train';
}

/** v2's split (every task has the same keys): the ordered values hash into the test fifth. */
export function creditValuesSplit(values: readonly number[]): 'train' | 'test' {
  return fnv1a(values.join(',')) % 5 === 0 ? 'test' : 'train';
}

/** `count` tasks of a split, deterministic from the seed (task i of the stream depends only on seed and i). */
export function generateCreditTasks(o: {
  seed: number;
  count: number;
  split: 'train' | 'test';
  design?: CreditDesign;
}): TaskRecord[] {
  const design = o.design ?? 'v1';
  const out: TaskRecord[] = [];
  for (let i = 0; out.length < o.count; i++) {
    const rng = Rng.derive(o.seed, 'credit-task', i);
    const keys = fixedKeys(design) ? [...CREDIT_V2_KEYS] : rng.shuffle([...CREDIT_KEYS]).slice(0, CREDIT_K);
    if (!fixedKeys(design) && creditSplit(keys) !== o.split) continue;
    const values = keys.map(() => 1 + Math.floor(rng.next() * 9));
    if (fixedKeys(design) && creditValuesSplit(values) !== o.split) continue;
    const t = { keys, values };
    out.push({
      kind: 'backend',
      source: 'generated',
      externalId: design === 'v1' ? `credit:${o.seed}:${i}` : `credit-${design}:${o.seed}:${i}`,
      split: o.split,
      description: creditDescription(keys, design),
      reference: creditReference(t),
      testCases: keys.map((k) => `settings()["${k}"]`),
      meta: { family: 'credit', design, keys, values },
    });
  }
  return out;
}

/** Pool keys a message names, in order of appearance. */
export function keysIn(text: string): string[] {
  const found: { k: string; at: number }[] = [];
  for (const k of CREDIT_KEYS) {
    const at = text.toLowerCase().search(new RegExp(`\\b${k}\\b`));
    if (at >= 0) found.push({ k, at });
  }
  return found.sort((a, b) => a.at - b.at).map((x) => x.k);
}

export type CreditMove = 'useful' | 'repeated' | 'useless' | 'answer';

export interface CreditReply {
  reply: string;
  move: Exclude<CreditMove, 'answer'>;
  /** The key whose value the reply gave, if any. */
  gave?: string;
}

/**
 * The collaborator's rule, pure: given the questions asked before (agent messages, not answers) and the new
 * question, what it says and what kind of move the question was. Only the hidden values are ever said; the
 * first needed key the question names is answered; at most `budget` questions are answered (K unless given).
 */
export function creditReply(
  t: CreditTask,
  earlier: readonly string[],
  question: string,
  budget = t.keys.length,
): CreditReply {
  if (earlier.length >= budget) return { reply: NO_MORE, move: 'useless' };
  const given = new Set(
    earlier.flatMap((q) =>
      keysIn(q)
        .filter((k) => t.keys.includes(k))
        .slice(0, 1),
    ),
  );
  const needed = keysIn(question).filter((k) => t.keys.includes(k));
  const k = needed[0];
  if (k === undefined) return { reply: DONT_KNOW_CREDIT, move: 'useless' };
  return { reply: `The ${k} is ${t.values[t.keys.indexOf(k)]}.`, move: given.has(k) ? 'repeated' : 'useful', gave: k };
}

const agentQuestions = (dialogue: readonly ChatMessage[]) =>
  dialogue
    .slice(2)
    .filter((m) => m.role === 'assistant')
    .map((m) => m.content);

/** The collaborator of one game; `budget`: the questions it answers (K unless given; creditGameBudget since v7). */
export function createCreditCollaborator(task: { reference: string }, budget?: number): Collaborator {
  const t = parseCreditReference(task.reference);
  return {
    name: 'credit-collaborator',
    async reply(dialogue) {
      const qs = agentQuestions(dialogue);
      return creditReply(t, qs.slice(0, -1), qs[qs.length - 1] ?? '', budget).reply;
    },
  };
}

/** Score = fraction of the needed values the answer's dict returns right; success = all. */
export function scoreCreditAnswer(
  reference: string,
  answer: string,
): { score: number; success: boolean; right: number } {
  const t = parseCreditReference(reference);
  let right = 0;
  t.keys.forEach((k, i) => {
    const m = new RegExp(`["']${k}["']\\s*:\\s*(-?\\d+)`).exec(answer);
    if (m && Number(m[1]) === t.values[i]) right++;
  });
  return { score: right / t.keys.length, success: right === t.keys.length, right };
}

/**
 * v5's cost of an idle question: one asked when nothing more can be obtained (every value told, or the budget
 * spent). Without it UUURRRRRA scores as UUUA, so the rewards give no reason to answer once done.
 */
export const CREDIT_IDLE_COST = 0.05;

/** Whether a move asks when nothing more can be obtained (v5's idle question): every value told, or refused. */
const isIdle = (m: MoveRecord, k = CREDIT_K): boolean => m.move !== 'answer' && (m.before >= k || m.refused);

/**
 * v2's score: the fraction of the needed values the collaborator gave before the answer; success = all. v5 takes
 * CREDIT_IDLE_COST off for each idle question (at most 6 a game, so a game with a value keeps a positive score; one
 * with none scores 0 whatever it asked).
 */
export function scoreCreditGame(
  reference: string,
  turns: readonly { role: string; content: string }[],
  design: CreditDesign = 'v2',
): { score: number; success: boolean; right: number } {
  const k = parseCreditReference(reference).keys.length;
  const moves = classifyMoves(reference, turns, design);
  const right = moves.filter((m) => m.move === 'useful').length;
  const idle = designSince(design, 'v5') ? moves.filter((m) => isIdle(m, k)).length : 0;
  return { score: Math.max(0, right / k - CREDIT_IDLE_COST * idle), success: right === k, right };
}

/**
 * The family's scorer for simulate(). v1: the answer's dict, the same score as the sandboxed tests without the
 * sandbox; v2: the values obtained in the game, so it needs the dialogue.
 */
export function createCreditScorer(o: { design?: CreditDesign } = {}): Scorer {
  const design = o.design ?? 'v1';
  return {
    async evaluate(task, answer, turns): Promise<EvaluationOutcome> {
      if (fixedKeys(design) && !turns)
        throw new Error(
          `credit scorer (design ${design}) scores the values obtained in the game: it needs the dialogue`,
        );
      const r = fixedKeys(design)
        ? scoreCreditGame(task.reference, turns!, design)
        : scoreCreditAnswer(task.reference, answer);
      return {
        score: r.score,
        success: r.success,
        testsPassed: r.right,
        testsTotal: parseCreditReference(task.reference).keys.length,
        detail: { family: 'credit', design },
        evaluatorVersion: design === 'v1' ? CREDIT_EVALUATOR_VERSION : `${CREDIT_EVALUATOR_VERSION}-${design}`,
      };
    },
    async close() {},
  };
}

export interface MoveRecord {
  move: CreditMove;
  /** Values given before this move. */
  before: number;
  /** Questions asked before this move. */
  asked: number;
  /** A question the collaborator refused (its budget was spent): no value, and an idle question. */
  refused: boolean;
  /** A refusal came before this move, so the player knows the budget is spent. */
  spent: boolean;
  /** A question naming a needed key not told yet: useful if answered. */
  seeks: boolean;
  /** The key whose value the collaborator's reply gave (a useful or a repeated question). */
  gave?: string;
}

/**
 * Each agent turn of a played dialogue (agent/human alternating, agent first) classified, in order, under the
 * design's budget; since v7 the game's budget is read from the dialogue (the questions before the collaborator's
 * first refusal), and where none was refused a last question without a reply (a candidate) is answered if the
 * largest budget has room for it.
 */
export function classifyMoves(
  reference: string,
  turns: readonly { role: string; content: string }[],
  design: CreditDesign = 'v1',
): MoveRecord[] {
  const t = parseCreditReference(reference);
  const agent = turns.filter((x) => x.role === 'agent');
  const replies = turns.filter((x) => x.role !== 'agent');
  const refusedAt = replies.findIndex((r) => r.content === NO_MORE);
  // A design with one budget (before v7) applies it as the collaborator did. Since v7, without a refusal every
  // question with a reply was answered, and only a last question without one (a candidate) needs the largest budget.
  const budgets = creditBudgets(design, t.keys.length);
  const budget = budgets.length === 1 ? budgets[0]! : refusedAt >= 0 ? refusedAt : Math.max(replies.length, ...budgets);
  const qs: string[] = [];
  const given = new Set<string>();
  const out: MoveRecord[] = [];
  let spent = false;
  agent.forEach((m, i) => {
    const parsed = parseAgentMessage(m.content, { kind: 'backend', turnIndex: Math.min(i, MAX_AGENT_TURNS - 1) });
    const state = { before: given.size, asked: qs.length, spent };
    if (parsed.type === 'answer') {
      out.push({ move: 'answer', ...state, refused: false, seeks: false });
      return;
    }
    const r = creditReply(t, qs, m.content, budget);
    // The collaborator answers the first needed key a question names (creditReply).
    const named = keysIn(m.content).find((k) => t.keys.includes(k));
    const seeks = named !== undefined && !given.has(named);
    const refused = r.reply === NO_MORE;
    out.push({ move: r.move, ...state, refused, seeks, ...(r.gave ? { gave: r.gave } : {}) });
    if (r.gave) given.add(r.gave);
    if (refused) spent = true;
    qs.push(m.content);
  });
  return out;
}

export const question = (key: string): string => `What is the ${key}?`;
/**
 * The demonstrator's answer: v1-v4 write the values told (0 for the others); v5 writes none, since v2's score is
 * the values obtained in the dialogue, and a dict with a 0 where the reference has a value tells a critic that
 * reads the reference the outcome in the last turn, so it need not credit the questions (bench/HISTORY.md,
 * "Design v5").
 */
export const creditAnswer = (
  keys: readonly string[],
  told: ReadonlyMap<string, number>,
  design: CreditDesign = 'v1',
) =>
  designSince(design, 'v5')
    ? CREDIT_V5_ANSWER
    : `${ANSWER_MARKER}\ndef settings():\n    return {${keys.map((k) => `"${k}": ${told.get(k) ?? 0}`).join(', ')}}`;
export const CREDIT_V5_ANSWER = `${ANSWER_MARKER}\ndef settings():\n    return told`;
