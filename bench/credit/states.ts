// Reading policies and critics state by state (README.md, "Measures"): a policy's probability of each move class
// in each canonical state (tasks/credit-states.ts), and the critic gate, the within-state accuracy of the score
// the SWEET-RL actor ranks its candidates by. Both score the demonstrator's own messages, so they read what a
// model does with the state, not with wording it never saw.
import type { TaskContent, TaskRecord } from '../../tasks/model.ts';
import { CANONICAL_STATES, canonicalMoves, canonicalStates, type CanonicalState } from '../../tasks/credit-states.ts';
import type { CreditDesign, CreditMove } from '../../tasks/credit.ts';
import type { CandidateRanker } from '../../trainer/actor.ts';
import type { RankingReference } from '../../trainer/critic.ts';
import { completionLogprobValues } from '../../trainer/model/logprobs.ts';
import { criticDialogue, encodeAction, policyDialogue, type LoadedModel } from '../../trainer/sequences.ts';

const MOVES: readonly CreditMove[] = ['useful', 'repeated', 'useless', 'answer'];
const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

export type MoveProbabilities = Record<CreditMove, number> & { covered: number };

/**
 * A model's view of a state: the policy's (the dialogue as the agent sees it) or the critic's (the hidden
 * information in the system prompt too, trainer/sequences.ts criticDialogue).
 */
export type StateView = 'policy' | 'critic';

/** The per-token log-probabilities of each message in a state (the sampler's: what the actor's ranking subtracts). */
async function messageLogprobs(
  policy: LoadedModel,
  task: TaskContent,
  turns: Parameters<typeof policyDialogue>[1],
  texts: readonly string[],
  view: StateView = 'policy',
): Promise<number[][]> {
  const dialogue = view === 'critic' ? criticDialogue(task, turns) : policyDialogue(task, turns);
  const rows = texts.map((text) => encodeAction(policy, dialogue, text, policy.model.config.maxPositionEmbeddings));
  return completionLogprobValues(policy.model, rows, { padTokenId: policy.tokenizer.padTokenId, batchSize: 13 });
}

/**
 * A policy's probability of each move class in each canonical state: the exact probability of each of the
 * demonstrator's messages there (12 questions and the answer), summed by class and averaged over the state's
 * variants and the tasks. `covered` is their total: the rest of the mass is on messages the demonstrator never
 * writes (at temperature 1 that mass is sampled too; greedy play rarely goes there while it is small).
 */
export async function stateProbabilities(
  policy: LoadedModel,
  tasks: readonly TaskRecord[],
  o: { view?: StateView; design?: CreditDesign } = {},
): Promise<StateReading> {
  const sum = Object.fromEntries(
    CANONICAL_STATES.map((s) => [s, { useful: 0, repeated: 0, useless: 0, answer: 0, covered: 0, n: 0 }]),
  ) as Record<CanonicalState, MoveProbabilities & { n: number }>;
  const keyed = { told: [] as number[], untold: [] as number[] };
  const recency = { earlier: 0, last: 0, n: 0 };
  const byLeft = new Map<string, { useful: number; n: number }>();
  for (const t of tasks) {
    for (const v of canonicalStates(t.reference)) {
      const moves = canonicalMoves(t.reference, v, o.design);
      const lp = await messageLogprobs(
        policy,
        t,
        v.turns,
        moves.map((m) => m.text),
        o.view,
      );
      const acc = sum[v.state];
      moves.forEach((m, i) => {
        const logp = lp[i]!.reduce((a, b) => a + b, 0);
        const p = Math.exp(logp);
        acc[m.move] += p;
        acc.covered += p;
        if ((m.move === 'useful' || m.move === 'repeated') && v.state !== 'first message')
          keyed[m.move === 'useful' ? 'untold' : 'told'].push(logp);
        if (v.state === 'after 2 values' && m.move === 'repeated')
          recency[m.key === v.told[0] ? 'earlier' : 'last'] += p;
        if (v.state === 'after 2 values' && m.move === 'useful' && m.key) {
          // One useful move a variant: the key left to ask.
          const b = byLeft.get(m.key) ?? byLeft.set(m.key, { useful: 0, n: 0 }).get(m.key)!;
          b.useful += p;
          b.n++;
        }
      });
      if (v.state === 'after 2 values') recency.n++;
      acc.n++;
    }
  }
  return {
    byState: Object.fromEntries(
      CANONICAL_STATES.map((s) => {
        const a = sum[s];
        return [
          s,
          {
            useful: a.useful / a.n,
            repeated: a.repeated / a.n,
            useless: a.useless / a.n,
            answer: a.answer / a.n,
            covered: a.covered / a.n,
          },
        ];
      }),
    ) as Record<CanonicalState, MoveProbabilities>,
    keyContrast: mean(keyed.untold) - mean(keyed.told),
    repeatAfterTwo: { earlier: recency.earlier / Math.max(1, recency.n), last: recency.last / Math.max(1, recency.n) },
    usefulAfterTwoByKey: Object.fromEntries(
      [...byLeft].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, b]) => [k, b.useful / b.n]),
    ),
  };
}

export interface StateReading {
  byState: Record<CanonicalState, MoveProbabilities>;
  /**
   * Whether the policy reads the state at all: the mean log-probability of asking one of the task's keys when its
   * value was not told yet, minus when it was (after 1 or 2 values; nats). 0 for a policy that picks keys by name
   * whatever was said (over the variants each key is as often told as not); the demonstrator's table gives
   * log(0.35/2) - log(0.5) = -1.05 after one value, the optimum a large positive number.
   */
  keyContrast: number;
  /**
   * After 2 values, the probability of asking again the key told first and the key told last: a policy that avoids
   * only the key just told repeats the earlier one as often as it asks the untold one.
   */
  repeatAfterTwo: { earlier: number; last: number };
  /**
   * After 2 values, the probability of asking the one key left, by that key: a policy that reads the state for some
   * keys only (asks one key whenever it is untold, and picks between the others by chance) shows here.
   */
  usefulAfterTwoByKey: Record<string, number>;
}

export interface CriticGate {
  /** Within-state pairs the ranking score orders as the true values do, of all pairs checked. */
  withinStateAccuracy: number;
  pairs: number;
  /** By comparison: useful against repeated (after 1 or 2 values), and the answer against asking a key again once every value is told. */
  byKind: {
    usefulOverRepeated: { accuracy: number; pairs: number };
    answerOverQuestion: { accuracy: number; pairs: number };
  };
  /**
   * The ranking score's own key contrast (after 1 or 2 values): the mean score of asking a key whose value was not
   * told minus asking a told one. Over the variants each key is as often one as the other, so a score by key name
   * gives 0; positive is credit in the right direction, even while key-name differences still decide the pairs.
   */
  keyContrast: number;
  /** Mean score of each move class in each state, to see what the critic rewards. */
  meanScore: Record<CanonicalState, Partial<Record<CreditMove, number>>>;
}

/**
 * The critic gate: in every variant of the canonical states of `tasks`, the ranker scores the demonstrator's
 * messages as the actor's collection does (against the sampler's log-probabilities, or the initial critic's as
 * TrainConfig.rankingReference says); within each state a useful
 * question must score above a repeated one, and once every value is told the answer above asking one of the
 * task's keys again. Over the variants each key is useful in some states and repeated in others, so a score
 * that follows a key's name and not the state gets about half of these pairs right.
 */
export async function criticGate(
  ranker: CandidateRanker,
  sampler: LoadedModel,
  tasks: readonly TaskRecord[],
  reference: RankingReference = 'sampler',
  design?: CreditDesign,
): Promise<CriticGate> {
  const tally = { usefulOverRepeated: { right: 0, pairs: 0 }, answerOverQuestion: { right: 0, pairs: 0 } };
  const keyed = { untold: [] as number[], told: [] as number[] };
  const scoreSum = Object.fromEntries(
    CANONICAL_STATES.map((s) => [s, {} as Partial<Record<CreditMove, { sum: number; n: number }>>]),
  ) as Record<CanonicalState, Partial<Record<CreditMove, { sum: number; n: number }>>>;
  for (const t of tasks) {
    for (const v of canonicalStates(t.reference)) {
      const moves = canonicalMoves(t.reference, v, design);
      const texts = moves.map((m) => m.text);
      const policyLogp = await messageLogprobs(sampler, t, v.turns, texts);
      const scores = await ranker.scoreCandidates({ task: t, turns: v.turns }, texts, policyLogp, { reference });
      moves.forEach((m, i) => {
        const cell = (scoreSum[v.state][m.move] ??= { sum: 0, n: 0 });
        cell.sum += scores[i]!;
        cell.n++;
      });
      const of = (move: CreditMove) => moves.flatMap((m, i) => (m.move === move ? [scores[i]!] : []));
      // Once every value is told the budget is spent too, so the collaborator classes any question as useless:
      // asking one of the task's keys again is what the answer is compared with.
      const askAgain = moves.flatMap((m, i) =>
        m.move !== 'answer' && m.key !== null && v.told.includes(m.key) ? [scores[i]!] : [],
      );
      const count = (kind: keyof typeof tally, better: number[], worse: number[]) => {
        for (const b of better)
          for (const w of worse) {
            tally[kind].pairs++;
            if (b > w) tally[kind].right++;
          }
      };
      if (v.state === 'after 1 value' || v.state === 'after 2 values') {
        count('usefulOverRepeated', of('useful'), of('repeated'));
        keyed.untold.push(...of('useful'));
        keyed.told.push(...of('repeated'));
      }
      if (v.state === 'budget spent') count('answerOverQuestion', of('answer'), askAgain);
    }
  }
  const acc = (x: { right: number; pairs: number }) => ({
    accuracy: x.pairs ? x.right / x.pairs : NaN,
    pairs: x.pairs,
  });
  const pairs = tally.usefulOverRepeated.pairs + tally.answerOverQuestion.pairs;
  return {
    keyContrast: mean(keyed.untold) - mean(keyed.told),
    withinStateAccuracy: (tally.usefulOverRepeated.right + tally.answerOverQuestion.right) / Math.max(1, pairs),
    pairs,
    byKind: { usefulOverRepeated: acc(tally.usefulOverRepeated), answerOverQuestion: acc(tally.answerOverQuestion) },
    meanScore: Object.fromEntries(
      CANONICAL_STATES.map((s) => [
        s,
        Object.fromEntries(
          MOVES.flatMap((m) => (scoreSum[s][m] ? [[m, scoreSum[s][m]!.sum / scoreSum[s][m]!.n]] : [])),
        ),
      ]),
    ) as CriticGate['meanScore'],
  };
}
