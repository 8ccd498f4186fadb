// The credit family's demonstrator (bench/credit/README.md, "The starter"): the scripted player whose games the
// starter imitates, its table of move probabilities per state for each design, its exact success, and the check
// that a played set of games follows the table. The family itself (tasks, collaborator, scorer, moves) is credit.ts.
import type { Agent, ChatMessage } from './agent.ts';
import {
  classifyMoves,
  creditAnswer,
  CREDIT_K,
  CREDIT_KEYS,
  creditBudgets,
  fixedKeys,
  keysIn,
  NO_MORE,
  parseCreditReference,
  question,
  scoreCreditAnswer,
  scoreCreditGame,
  designSince,
  type CreditDesign,
  type CreditMove,
  type MoveRecord,
} from './credit.ts';
import { knownDone } from './credit-values.ts';
import { MAX_AGENT_TURNS } from './protocol.ts';
import { Rng } from './random.ts';

/**
 * Per-state move probabilities of the starter's demonstrator (bench/credit/README.md's tables). v1-v3: after a new
 * value it double-checks (0.5), so a told key is likelier than an untold one there and less likely elsewhere; v4:
 * one row while values are missing, so an untold key is likelier than a told one in every state (the v4 note); v6:
 * once nothing more can be obtained it asks again half the time (0.1 before), so the data holds games that differ
 * only there (the v6 note). What the demonstrator knows of that is credit-values.ts knownDone: since v7, whose budget
 * nobody is told, a refusal seen or the largest budget asked.
 */
export function demonstratorMix(
  s: { first: boolean; before: number; asked: number; lastGaveNew: boolean; spent?: boolean },
  k = CREDIT_K,
  design: CreditDesign = 'v1',
): Record<CreditMove, number> {
  if (s.first) return { useful: 0.6, repeated: 0, useless: 0.3, answer: 0.1 };
  if (knownDone({ before: s.before, asked: s.asked, spent: s.spent ?? false }, k, design))
    return designSince(design, 'v6')
      ? { useful: 0, repeated: 0.5, useless: 0, answer: 0.5 }
      : { useful: 0, repeated: 0.1, useless: 0, answer: 0.9 };
  if (designSince(design, 'v4'))
    return s.before >= 1
      ? { useful: 0.6, repeated: 0.15, useless: 0.15, answer: 0.1 }
      : { useful: 0.6, repeated: 0, useless: 0.3, answer: 0.1 };
  if (s.lastGaveNew) return { useful: 0.35, repeated: 0.5, useless: 0.1, answer: 0.05 };
  return s.before >= 1
    ? { useful: 0.6, repeated: 0.1, useless: 0.25, answer: 0.05 }
    : { useful: 0.6, repeated: 0, useless: 0.35, answer: 0.05 };
}

/**
 * The demonstrator's exact success probability (enumeration of its mixture, in expectation over the design's
 * budgets; answers copy what was told).
 */
export function demonstratorSuccess(k = CREDIT_K, design: CreditDesign = 'v1'): number {
  const budgets = creditBudgets(design, k);
  const go = (budget: number, turn: number, before: number, asked: number, lastGaveNew: boolean): number => {
    if (turn === MAX_AGENT_TURNS - 1) return before === k ? 1 : 0;
    const spent = asked > budget;
    const p = demonstratorMix({ first: turn === 0, before, asked, lastGaveNew, spent }, k, design);
    const within = asked < budget;
    let s = p.answer * (before === k ? 1 : 0);
    if (p.useful) s += p.useful * go(budget, turn + 1, within ? before + 1 : before, asked + 1, within);
    if (p.repeated) s += p.repeated * go(budget, turn + 1, before, asked + 1, false);
    if (p.useless) s += p.useless * go(budget, turn + 1, before, asked + 1, false);
    return s;
  };
  return budgets.reduce((sum, b) => sum + go(b, 0, 0, 0, false), 0) / budgets.length;
}

function stateOf(dialogue: readonly ChatMessage[]) {
  const task = { keys: keysIn(dialogue[1]!.content.split('keys')[1] ?? '') };
  const told = new Map<string, number>();
  const asked: string[] = [];
  let lastGaveNew = false;
  let spent = false;
  for (let i = 2; i + 1 < dialogue.length; i += 2) {
    asked.push(dialogue[i]!.content);
    const m = /^The ([a-z]+) is (\d+)\.$/.exec(dialogue[i + 1]!.content);
    lastGaveNew = !!m && !told.has(m[1]!);
    if (m) told.set(m[1]!, Number(m[2]));
    if (dialogue[i + 1]!.content === NO_MORE) spent = true;
  }
  return { keys: task.keys, told, asked, lastGaveNew, spent, turn: asked.length };
}

/**
 * The starter's demonstrator: each move drawn from `demonstratorMix`; `optimal` plays the optimum instead (ask
 * each needed key once, in order, then answer). Sees only what the agent sees (the dialogue). Designs v1 and v2
 * ask the first unasked key and double-check the key just told; v3 and v4 ask a random unasked key and double-check a
 * random told one, so a key's name carries no information about whether asking it is useful.
 */
export function createCreditDemonstrator(o: { seed: number; optimal?: boolean; design?: CreditDesign }): Agent {
  const rng = new Rng(o.seed);
  const shuffled = designSince(o.design ?? 'v1', 'v3');
  const anyOf = (keys: readonly string[]) => keys[Math.floor(rng.next() * keys.length)];
  return {
    name: o.optimal ? 'credit-optimal' : 'credit-demonstrator',
    async reply(dialogue) {
      const s = stateOf(dialogue);
      const unasked = s.keys.filter((k) => !s.told.has(k));
      if (o.optimal)
        return {
          text:
            unasked.length && s.turn < MAX_AGENT_TURNS - 1
              ? question(unasked[0]!)
              : creditAnswer(s.keys, s.told, o.design),
        };
      if (s.turn >= MAX_AGENT_TURNS - 1) return { text: creditAnswer(s.keys, s.told, o.design) };
      const p = demonstratorMix(
        {
          first: s.turn === 0,
          before: s.told.size,
          asked: s.asked.length,
          lastGaveNew: s.lastGaveNew,
          spent: s.spent,
        },
        CREDIT_K,
        o.design,
      );
      let u = rng.next();
      const pick = (['useful', 'repeated', 'useless', 'answer'] as const).find((m) => (u -= p[m]) < 0) ?? 'answer';
      if (pick === 'answer') return { text: creditAnswer(s.keys, s.told, o.design) };
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

function stateOfMove(
  m: MoveRecord,
  previous: MoveRecord | undefined,
  k = CREDIT_K,
  design: CreditDesign = 'v1',
): CreditState {
  if (!previous) return 'first';
  if (knownDone(m, k, design)) return 'all given or budget spent';
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
    const moves = classifyMoves(g.reference, g.turns, design);
    moves.forEach((m, i) => {
      if (i < MAX_AGENT_TURNS - 1) counts[stateOfMove(m, moves[i - 1], CREDIT_K, design)][m.move]++;
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
    if (designSince(design, 'v5')) {
      // v5's answer writes no values (credit.ts creditAnswer): nothing to copy, no keys to check.
      if (scoreCreditGame(g.reference, g.turns, design).success) success++;
      continue;
    }
    const written = [...last.matchAll(/["']([a-z]+)["']\s*:/g)].map((m) => m[1]!);
    if (written.some((k) => !t.keys.includes(k)) || t.keys.some((k) => !written.includes(k))) wrongKeys++;
    for (const k of toldKeys) {
      told++;
      if (new RegExp(`["']${k}["']\\s*:\\s*${t.values[t.keys.indexOf(k)]}\\b`).test(last)) copied++;
    }
    if (
      (fixedKeys(design) ? scoreCreditGame(g.reference, g.turns, design) : scoreCreditAnswer(g.reference, last)).success
    )
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
