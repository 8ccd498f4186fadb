// The controls of the credit benchmark (README.md, "Controls"): SWEET-RL's actor with its learned critic replaced
// by the true value of each candidate move (an oracle) or by noise. Both are CandidateRankers, the interface the
// learned critic ranks through (trainer/actor.ts), so the candidates, pairs and DPO are the same code.
import { CREDIT_K, type CreditDesign } from '../../tasks/credit.ts';
import { trueMoveValue } from '../../tasks/credit-values.ts';
import { moveOf } from '../../tasks/credit-states.ts';
import { Rng } from '../../tasks/random.ts';
import type { CandidateRanker } from '../../trainer/actor.ts';

/** Each candidate scored by A*(s, a), its move's true value under optimal play afterwards (tasks/credit.ts). */
export function oracleRanker(design: CreditDesign): CandidateRanker {
  return {
    async scoreCandidates(state, candidates) {
      return candidates.map((c) =>
        trueMoveValue(moveOf(state.task.reference, state.turns, c, design), CREDIT_K, design),
      );
    },
    dispose() {},
  };
}

/** Each candidate scored by a uniform draw, seeded by the state and the candidates (the same in any run). */
export function randomRanker(seed: number): CandidateRanker {
  return {
    async scoreCandidates(state, candidates) {
      const rng = Rng.derive(seed, 'random-ranker', state.task.reference, state.turns.length, ...candidates);
      return candidates.map(() => rng.next());
    },
    dispose() {},
  };
}

export const RANKERS = {
  oracle: (design: CreditDesign) => ({
    name: 'the oracle (true move values)',
    load: async () => oracleRanker(design),
  }),
  random: (seed: number) => ({ name: 'a random ranker (uniform noise)', load: async () => randomRanker(seed) }),
};
