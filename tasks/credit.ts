// The credit-assignment task family (bench/credit/README.md): the hidden information holds K values the answer
// needs, the collaborator answers at most K questions and only from the hidden information, so every wasted
// question costs a value and the optimum (ask each needed key once, then answer) is known exactly. Tasks are
// ordinary backend tasks (a Python function returning a dict; one test call a key), so storage, training and
// the sandboxed evaluator treat them as any other; `scoreCreditAnswer` is the same score in TypeScript.
import type { Agent, ChatMessage, Collaborator } from './agent.ts';
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
/** Needed values a task; also the collaborator's question budget. */
export const CREDIT_K = 3;
export const NO_MORE = 'No more questions: please answer now.';
export const DONT_KNOW_CREDIT = "I don't know.";
export const CREDIT_EVALUATOR_VERSION = 'credit-1';
/**
 * The family's designs (bench/credit/README.md): v1, keys drawn per task and the answer's dict scored; v2, the
 * same K keys in every task and the values obtained in the dialogue scored (no copying needed); v3, v2's tasks
 * with a demonstrator that asks its useful questions in a random order and double-checks a random told key, so
 * that which key a question names says nothing about the move's value.
 */
export type CreditDesign = 'v1' | 'v2' | 'v3' | 'v4';
export const CREDIT_DESIGNS: readonly CreditDesign[] = ['v1', 'v2', 'v3', 'v4'];
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

export function creditDescription(keys: readonly string[]): string {
  const list = keys.length > 1 ? `${keys.slice(0, -1).join(', ')} and ${keys[keys.length - 1]}` : keys[0];
  return `I need settings() for my machine. It returns a dict with the keys ${list}. I can answer ${keys.length} questions. The signature of the function is: def settings():`;
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
      description: creditDescription(keys),
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
 * first needed key the question names is answered; at most K questions are answered.
 */
export function creditReply(t: CreditTask, earlier: readonly string[], question: string): CreditReply {
  if (earlier.length >= t.keys.length) return { reply: NO_MORE, move: 'useless' };
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

export function createCreditCollaborator(task: { reference: string }): Collaborator {
  const t = parseCreditReference(task.reference);
  return {
    name: 'credit-collaborator',
    async reply(dialogue) {
      const qs = agentQuestions(dialogue);
      return creditReply(t, qs.slice(0, -1), qs[qs.length - 1] ?? '').reply;
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

/** v2's score: the fraction of the needed values the collaborator gave before the answer; success = all. */
export function scoreCreditGame(
  reference: string,
  turns: readonly { role: string; content: string }[],
): { score: number; success: boolean; right: number } {
  const k = parseCreditReference(reference).keys.length;
  const right = classifyMoves(reference, turns).filter((m) => m.move === 'useful').length;
  return { score: right / k, success: right === k, right };
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
      const r = fixedKeys(design) ? scoreCreditGame(task.reference, turns!) : scoreCreditAnswer(task.reference, answer);
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
}

/** Each agent turn of a played dialogue (agent/human alternating, agent first) classified, in order. */
export function classifyMoves(reference: string, turns: readonly { role: string; content: string }[]): MoveRecord[] {
  const t = parseCreditReference(reference);
  const qs: string[] = [];
  const given = new Set<string>();
  const out: MoveRecord[] = [];
  const agent = turns.filter((x) => x.role === 'agent');
  agent.forEach((m, i) => {
    const parsed = parseAgentMessage(m.content, { kind: 'backend', turnIndex: Math.min(i, MAX_AGENT_TURNS - 1) });
    if (parsed.type === 'answer') {
      out.push({ move: 'answer', before: given.size, asked: qs.length });
      return;
    }
    const r = creditReply(t, qs, m.content);
    out.push({ move: r.move, before: given.size, asked: qs.length });
    if (r.gave) given.add(r.gave);
    qs.push(m.content);
  });
  return out;
}

/**
 * A*(s, a) = Q*(s, a) - V*(s) in final-score units under optimal play afterwards: a useful question 0, a wasted
 * question -1/K while values are missing and it uses a question the budget had (0 otherwise), an answer
 * -(values still obtainable)/K.
 */
export function trueMoveValue(m: MoveRecord, k = CREDIT_K): number {
  const obtainable = Math.min(k - m.before, k - m.asked);
  if (m.move === 'answer') return obtainable === 0 ? 0 : -obtainable / k;
  if (m.move === 'useful') return 0;
  return obtainable > 0 ? -1 / k : 0;
}

/**
 * Per-state move probabilities of the starter's demonstrator (bench/credit/README.md's tables). v1-v3: after a new
 * value it double-checks (0.5), so a told key is likelier than an untold one there and less likely elsewhere; v4:
 * one row while values are missing, so an untold key is likelier than a told one in every state (the v4 note).
 */
export function demonstratorMix(
  s: { first: boolean; before: number; asked: number; lastGaveNew: boolean },
  k = CREDIT_K,
  design: CreditDesign = 'v1',
): Record<CreditMove, number> {
  if (s.first) return { useful: 0.6, repeated: 0, useless: 0.3, answer: 0.1 };
  if (s.before >= k || s.asked >= k) return { useful: 0, repeated: 0.1, useless: 0, answer: 0.9 };
  if (design === 'v4')
    return s.before >= 1
      ? { useful: 0.6, repeated: 0.15, useless: 0.15, answer: 0.1 }
      : { useful: 0.6, repeated: 0, useless: 0.3, answer: 0.1 };
  if (s.lastGaveNew) return { useful: 0.35, repeated: 0.5, useless: 0.1, answer: 0.05 };
  return s.before >= 1
    ? { useful: 0.6, repeated: 0.1, useless: 0.25, answer: 0.05 }
    : { useful: 0.6, repeated: 0, useless: 0.35, answer: 0.05 };
}

/** The demonstrator's exact success probability (enumeration of its mixture; answers copy what was told). */
export function demonstratorSuccess(k = CREDIT_K, design: CreditDesign = 'v1'): number {
  const go = (turn: number, before: number, asked: number, lastGaveNew: boolean): number => {
    if (turn === MAX_AGENT_TURNS - 1) return before === k ? 1 : 0;
    const p = demonstratorMix({ first: turn === 0, before, asked, lastGaveNew }, k, design);
    const within = asked < k;
    let s = p.answer * (before === k ? 1 : 0);
    if (p.useful) s += p.useful * go(turn + 1, within ? before + 1 : before, asked + 1, within);
    if (p.repeated) s += p.repeated * go(turn + 1, before, asked + 1, false);
    if (p.useless) s += p.useless * go(turn + 1, before, asked + 1, false);
    return s;
  };
  return go(0, 0, 0, false);
}

export const question = (key: string): string => `What is the ${key}?`;
export const creditAnswer = (keys: readonly string[], told: ReadonlyMap<string, number>) =>
  `${ANSWER_MARKER}\ndef settings():\n    return {${keys.map((k) => `"${k}": ${told.get(k) ?? 0}`).join(', ')}}`;

function stateOf(dialogue: readonly ChatMessage[]) {
  const task = { keys: keysIn(dialogue[1]!.content.split('keys')[1] ?? '') };
  const told = new Map<string, number>();
  const asked: string[] = [];
  let lastGaveNew = false;
  for (let i = 2; i + 1 < dialogue.length; i += 2) {
    asked.push(dialogue[i]!.content);
    const m = /^The ([a-z]+) is (\d+)\.$/.exec(dialogue[i + 1]!.content);
    lastGaveNew = !!m && !told.has(m[1]!);
    if (m) told.set(m[1]!, Number(m[2]));
  }
  return { keys: task.keys, told, asked, lastGaveNew, turn: asked.length };
}

/**
 * The starter's demonstrator: each move drawn from `demonstratorMix`; `optimal` plays the optimum instead (ask
 * each needed key once, in order, then answer). Sees only what the agent sees (the dialogue). Designs v1 and v2
 * ask the first unasked key and double-check the key just told; v3 and v4 ask a random unasked key and double-check a
 * random told one, so a key's name carries no information about whether asking it is useful.
 */
export function createCreditDemonstrator(o: { seed: number; optimal?: boolean; design?: CreditDesign }): Agent {
  const rng = new Rng(o.seed);
  const shuffled = o.design === 'v3' || o.design === 'v4';
  const anyOf = (keys: readonly string[]) => keys[Math.floor(rng.next() * keys.length)];
  return {
    name: o.optimal ? 'credit-optimal' : 'credit-demonstrator',
    async reply(dialogue) {
      const s = stateOf(dialogue);
      const unasked = s.keys.filter((k) => !s.told.has(k));
      if (o.optimal)
        return {
          text: unasked.length && s.turn < MAX_AGENT_TURNS - 1 ? question(unasked[0]!) : creditAnswer(s.keys, s.told),
        };
      if (s.turn >= MAX_AGENT_TURNS - 1) return { text: creditAnswer(s.keys, s.told) };
      const p = demonstratorMix(
        { first: s.turn === 0, before: s.told.size, asked: s.asked.length, lastGaveNew: s.lastGaveNew },
        CREDIT_K,
        o.design,
      );
      let u = rng.next();
      const pick = (['useful', 'repeated', 'useless', 'answer'] as const).find((m) => (u -= p[m]) < 0) ?? 'answer';
      if (pick === 'answer') return { text: creditAnswer(s.keys, s.told) };
      if (pick === 'useful') return { text: question((shuffled ? anyOf(unasked) : unasked[0]) ?? s.keys[0]!) };
      if (pick === 'repeated') {
        const toldKeys = [...s.told.keys()];
        if (shuffled) return { text: question(anyOf(toldKeys) ?? s.keys[0]!) };
        const last = keysIn(s.asked[s.asked.length - 1] ?? '').find((k) => s.told.has(k));
        return {
          text: question(
            s.lastGaveNew && last ? last : (toldKeys[Math.floor(rng.next() * toldKeys.length)] ?? s.keys[0]!),
          ),
        };
      }
      const others = CREDIT_KEYS.filter((k) => !s.keys.includes(k));
      return { text: question(others[Math.floor(rng.next() * others.length)]!) };
    },
  };
}

/** The states of the demonstrator's table (bench/credit/README.md), in its order. */
export const CREDIT_STATES = ['first', 'after new value', 'otherwise', 'all given or budget spent'] as const;
export type CreditState = (typeof CREDIT_STATES)[number];

function stateOfMove(m: MoveRecord, previous: MoveRecord | undefined, k = CREDIT_K): CreditState {
  if (!previous) return 'first';
  if (m.before >= k || m.asked >= k) return 'all given or budget spent';
  return previous.move === 'useful' ? 'after new value' : 'otherwise';
}

export interface MixCheck {
  /** Per state of the table: moves played there and each move's share of them. */
  states: Record<CreditState, { moves: number; share: Record<CreditMove, number> }>;
  /** What the demonstrator's table says for each state (the 'otherwise' row as played with a value given). */
  designed: Record<CreditState, Record<CreditMove, number>>;
  /** Values the collaborator told before the answer, and how many of them the answer wrote right. */
  told: number;
  copied: number;
  /** Answers that wrote a key outside the task's list or left one of its keys out. */
  answersWithWrongKeys: number;
  answers: number;
  success: number;
  games: number;
}

/**
 * Whether played games follow the demonstrator's mixture: each move's share in each state of its table (the
 * protocol's forced 10th message left out), and whether answers copy the values told. The starter is trained
 * to play this mixture; the benchmark prints it so that a reader sees whether that premise holds.
 */
export function checkMixture(
  games: readonly { reference: string; turns: readonly { role: string; content: string }[] }[],
  design: CreditDesign = 'v1',
): MixCheck {
  const counts = Object.fromEntries(
    CREDIT_STATES.map((s) => [s, { useful: 0, repeated: 0, useless: 0, answer: 0 } as Record<CreditMove, number>]),
  ) as Record<CreditState, Record<CreditMove, number>>;
  let told = 0;
  let copied = 0;
  let wrongKeys = 0;
  let answers = 0;
  let success = 0;
  for (const g of games) {
    const moves = classifyMoves(g.reference, g.turns);
    moves.forEach((m, i) => {
      if (i < MAX_AGENT_TURNS - 1) counts[stateOfMove(m, moves[i - 1])][m.move]++;
    });
    const t = parseCreditReference(g.reference);
    const agent = g.turns.filter((x) => x.role === 'agent');
    const last = agent[agent.length - 1]?.content ?? '';
    if (moves[moves.length - 1]?.move !== 'answer') continue;
    answers++;
    const toldKeys = new Set(
      g.turns.flatMap((x) => {
        const m = x.role === 'human' ? /^The ([a-z]+) is (\d+)\.$/.exec(x.content) : null;
        return m ? [m[1]!] : [];
      }),
    );
    const written = [...last.matchAll(/["']([a-z]+)["']\s*:/g)].map((m) => m[1]!);
    if (written.some((k) => !t.keys.includes(k)) || t.keys.some((k) => !written.includes(k))) wrongKeys++;
    for (const k of toldKeys) {
      told++;
      if (new RegExp(`["']${k}["']\\s*:\\s*${t.values[t.keys.indexOf(k)]}\\b`).test(last)) copied++;
    }
    if ((fixedKeys(design) ? scoreCreditGame(g.reference, g.turns) : scoreCreditAnswer(g.reference, last)).success)
      success++;
  }
  const states = Object.fromEntries(
    CREDIT_STATES.map((s) => {
      const c = counts[s];
      const n = c.useful + c.repeated + c.useless + c.answer;
      return [
        s,
        {
          moves: n,
          share: {
            useful: c.useful / Math.max(1, n),
            repeated: c.repeated / Math.max(1, n),
            useless: c.useless / Math.max(1, n),
            answer: c.answer / Math.max(1, n),
          },
        },
      ];
    }),
  ) as MixCheck['states'];
  const designed = {
    first: demonstratorMix({ first: true, before: 0, asked: 0, lastGaveNew: false }, CREDIT_K, design),
    'after new value': demonstratorMix({ first: false, before: 1, asked: 1, lastGaveNew: true }, CREDIT_K, design),
    otherwise: demonstratorMix({ first: false, before: 1, asked: 2, lastGaveNew: false }, CREDIT_K, design),
    'all given or budget spent': demonstratorMix(
      { first: false, before: CREDIT_K, asked: CREDIT_K, lastGaveNew: false },
      CREDIT_K,
      design,
    ),
  };
  return { states, designed, told, copied, answersWithWrongKeys: wrongKeys, answers, success, games: games.length };
}

/** The check as lines of text: each state's shares, played against designed, then copying and success. */
export function formatMixCheck(label: string, c: MixCheck): string[] {
  const pct = (x: number) => (x * 100).toFixed(0).padStart(3);
  const row = (s: Record<CreditMove, number>) =>
    (['useful', 'repeated', 'useless', 'answer'] as const).map((m) => pct(s[m])).join(' /');
  return [
    `${label}: move shares % (useful / repeated / useless / answer), played vs designed:`,
    ...CREDIT_STATES.map(
      (s) => `  ${s.padEnd(26)} ${row(c.states[s].share)}  vs ${row(c.designed[s])}  (${c.states[s].moves} moves)`,
    ),
    `  values told then copied into the answer: ${c.copied}/${c.told} (${pct(c.copied / Math.max(1, c.told))} %); answers with a key missing or not in the list: ${c.answersWithWrongKeys}/${c.answers}; success ${c.success}/${c.games}`,
  ];
}
