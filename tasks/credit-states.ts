// The credit family's canonical states and moves (bench/credit/README.md, design v3): where a policy's choice
// decides its score, and every message the demonstrator can write there, each with its move class. Used to read
// a policy (or a critic) state by state rather than through aggregates: its probability of each move class in
// each state, its greedy path as letters, and the states of the pairs it was trained on. Pure: no model here
// (bench/credit/ computes the probabilities).
import {
  classifyMoves,
  creditAnswer,
  creditReply,
  CREDIT_KEYS,
  parseCreditReference,
  question,
  type CreditDesign,
  type CreditMove,
  type MoveRecord,
} from './credit.ts';
import { knownDone, trueMoveValue } from './credit-values.ts';

/** The states the benchmark reads a policy in, in order. */
export const CANONICAL_STATES = ['first message', 'after 1 value', 'after 2 values', 'budget spent'] as const;
export type CanonicalState = (typeof CANONICAL_STATES)[number];

export interface StateVariant {
  state: CanonicalState;
  /** The dialogue before the agent's next message (agent and human alternating, agent first). */
  turns: { role: 'agent' | 'human'; content: string }[];
  /** Keys told so far, in the order asked. */
  told: string[];
}

function permutations<T>(xs: readonly T[], n: number): T[][] {
  if (n === 0) return [[]];
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)], n - 1).map((rest) => [x, ...rest]));
}

/**
 * Every variant of each canonical state of a task: the keys told so far in every order, each by one useful
 * question (so "after 1 value" has K variants, "after 2 values" K(K-1), "budget spent" K! with every value told).
 * Over the variants each key is told, and left to ask, equally often: a reading that depends on a key's name and
 * not on the state averages out.
 */
export function canonicalStates(reference: string): StateVariant[] {
  const t = parseCreditReference(reference);
  const out: StateVariant[] = [];
  CANONICAL_STATES.forEach((state, n) => {
    for (const order of permutations(t.keys, n)) {
      const turns: StateVariant['turns'] = [];
      const asked: string[] = [];
      for (const k of order) {
        const q = question(k);
        turns.push({ role: 'agent', content: q }, { role: 'human', content: creditReply(t, asked, q).reply });
        asked.push(q);
      }
      out.push({ state, turns, told: order });
    }
  });
  return out;
}

/**
 * The messages the demonstrator can write in a state, each with its move class there: one question a pool key
 * (the task's keys useful or repeated, the others useless) and the answer with the values told.
 */
export function canonicalMoves(
  reference: string,
  v: Pick<StateVariant, 'turns' | 'told'>,
  design: CreditDesign = 'v1',
): { text: string; move: CreditMove; key: string | null }[] {
  const t = parseCreditReference(reference);
  const told = new Map(v.told.map((k) => [k, t.values[t.keys.indexOf(k)]!]));
  const moves = CREDIT_KEYS.map((k) => ({ text: question(k), key: k as string | null }));
  moves.push({ text: creditAnswer(t.keys, told, design), key: null });
  return moves.map((m) => ({ ...m, move: moveOf(reference, v.turns, m.text, design).move }));
}

/** The move a candidate message would be in a state (the collaborator's rule, as classifyMoves applies it). */
export function moveOf(
  reference: string,
  turns: readonly { role: string; content: string }[],
  text: string,
  design: CreditDesign = 'v1',
): MoveRecord {
  const moves = classifyMoves(reference, [...turns, { role: 'agent', content: text }], design);
  return moves[moves.length - 1]!;
}

const LETTER: Record<CreditMove, string> = { useful: 'U', repeated: 'R', useless: 'X', answer: 'A' };

/** A game's moves as letters: U useful, R repeated, X useless, A answer (e.g. URUA). */
export function movePath(
  reference: string,
  turns: readonly { role: string; content: string }[],
  design: CreditDesign = 'v1',
): string {
  return classifyMoves(reference, turns, design)
    .map((m) => LETTER[m.move])
    .join('');
}

/** Paths by how often they were played, most frequent first (ties by path). */
export function pathCounts(paths: readonly string[]): { path: string; games: number }[] {
  const n = new Map<string, number>();
  for (const p of paths) n.set(p, (n.get(p) ?? 0) + 1);
  return [...n]
    .map(([path, games]) => ({ path, games }))
    .sort((a, b) => b.games - a.games || (a.path < b.path ? -1 : 1));
}

/** A played game as the benchmark keeps it: its task, the dialogue, and its outcome. */
export interface PlayedGame {
  taskId: string;
  reference: string;
  turns: readonly { role: string; content: string }[];
  score: number;
  success: boolean;
}

export interface GreedySummary {
  /** The most played path and its share of the games. */
  path: string;
  share: number;
  /** Every path played, most frequent first. */
  paths: { path: string; games: number }[];
}

export function greedySummary(games: readonly PlayedGame[], design: CreditDesign = 'v1'): GreedySummary {
  const paths = pathCounts(games.map((g) => movePath(g.reference, g.turns, design)));
  return { path: paths[0]?.path ?? '', share: (paths[0]?.games ?? 0) / Math.max(1, games.length), paths };
}

/** Two policies played the same greedy game only when their paths agree on every task (game i against game i). */
export function sameGreedyGames(
  a: readonly PlayedGame[],
  b: readonly PlayedGame[],
  design: CreditDesign = 'v1',
): boolean {
  return (
    a.length === b.length &&
    a.every(
      (g, i) =>
        g.taskId === b[i]!.taskId &&
        movePath(g.reference, g.turns, design) === movePath(b[i]!.reference, b[i]!.turns, design),
    )
  );
}

/**
 * Greedy play as table lines: one row a policy, or one for several policies only when they played the same
 * game on every task (sameGreedyGames), each row with its path, so equal aggregates never pass for equal play.
 */
export function formatGreedyTable(
  rows: readonly { policy: string; games: readonly PlayedGame[] }[],
  design: CreditDesign = 'v1',
): string[] {
  const groups: (typeof rows)[number][][] = [];
  for (const r of rows) {
    const same = groups.find((g) => sameGreedyGames(g[0]!.games, r.games, design));
    if (same) same.push(r);
    else groups.push([r]);
  }
  const lines = [
    'greedy play (U useful, R repeated, X useless, A answer): policy | path (share of tasks) | other paths | score %',
  ];
  for (const g of groups) {
    const games = g[0]!.games;
    const s = greedySummary(games, design);
    const others = s.paths
      .slice(1, 4)
      .map((p) => `${p.path} ${p.games}`)
      .join(', ');
    const score = games.reduce((a, x) => a + x.score, 0) / Math.max(1, games.length);
    lines.push(
      `  ${g
        .map((r) => r.policy)
        .join(' = ')
        .padEnd(
          34,
        )} ${`${s.path} (${(s.share * 100).toFixed(1)} %)`.padEnd(22)} ${(others || '-').padEnd(28)} ${(score * 100).toFixed(1)}`,
    );
  }
  return lines;
}

/** The state of a pair, as its run stored it (trainer/actor.ts ActionPair), and the chosen side's text. */
export interface StoredPair {
  sessionId: string;
  agentTurn: number;
  chosenText?: string;
  rejectedText?: string;
}

export interface PairReading {
  pairs: number;
  /** Pairs by the values told before the move, with "spent" for states where nothing more can be obtained. */
  byValuesTold: Record<string, number>;
  /**
   * After 2 values with a question left: the pairs whose chosen side asks the key left, by that key. The only
   * pairs that teach telling the two told keys from the one left.
   */
  usefulChosenAfterTwoByKey: Record<string, number>;
  /**
   * Pairs whose two sides the true move values (credit.ts trueMoveValue) order as the ranker did, value alike (DPO on
   * noise), or the other way: how far a learned critic's pairs are from the oracle's.
   */
  byTrueValues: { agree: number; tie: number; against: number };
}

/** Reads `pairs` against the sessions they were sampled in (reference and turns by session id). */
export function readPairs(
  pairs: readonly StoredPair[],
  sessions: ReadonlyMap<string, { reference: string; turns: readonly { role: string; content: string }[] }>,
  design: CreditDesign,
): PairReading {
  const byValuesTold: Record<string, number> = {};
  const usefulChosenAfterTwoByKey: Record<string, number> = {};
  const byTrueValues = { agree: 0, tie: 0, against: 0 };
  let read = 0;
  for (const p of pairs) {
    const s = sessions.get(p.sessionId);
    if (!s || p.chosenText === undefined) continue;
    read++;
    const turns = s.turns.slice(0, 2 * p.agentTurn);
    const chosen = moveOf(s.reference, turns, p.chosenText, design);
    const k = parseCreditReference(s.reference).keys.length;
    const spent = knownDone(chosen, k, design);
    const label = spent ? 'spent' : String(chosen.before);
    byValuesTold[label] = (byValuesTold[label] ?? 0) + 1;
    if (!spent && chosen.before === 2 && chosen.move === 'useful' && chosen.gave) {
      usefulChosenAfterTwoByKey[chosen.gave] = (usefulChosenAfterTwoByKey[chosen.gave] ?? 0) + 1;
    }
    if (p.rejectedText !== undefined) {
      const gap =
        trueMoveValue(chosen, k, design) - trueMoveValue(moveOf(s.reference, turns, p.rejectedText, design), k, design);
      byTrueValues[gap > 1e-9 ? 'agree' : gap < -1e-9 ? 'against' : 'tie']++;
    }
  }
  return { pairs: read, byValuesTold, usefulChosenAfterTwoByKey, byTrueValues };
}
