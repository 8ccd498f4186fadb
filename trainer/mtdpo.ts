// Multi-turn DPO, the paper's strongest baseline: pairs of whole trajectories of the same task (the task's best
// against each strictly worse one, as for the critic), DPO over the sum of the log-probabilities of ALL the
// agent's turns of each trajectory, against the frozen initial policy. Same data, pairing and DPO code as SWEET-RL; what it lacks is
// the per-turn credit the critic gives.
import * as tf from '@tensorflow/tfjs';
import type { Trajectory } from './data.ts';
import { dpoLoss } from './losses.ts';
import { canonicalOrder, holdOutFirst, rewardPairs, scoredTrajectories, type Pair } from './pairs.ts';
import type { TrainConfig } from './presets.ts';
import { minibatchPhase, sequencePairShape, type Phase, type PhaseAnchor } from './schedule.ts';
import {
  encodeDialogue,
  policyDialogue,
  turnLogprobs,
  turnLogprobValues,
  type EncodedDialogue,
  type LoadedModel,
} from './sequences.ts';

export interface PolicyExample {
  sessionId: string;
  seq: EncodedDialogue;
  /** Summed reference log-probability of all agent-turn tokens, and how many there are. */
  refSum: number;
  tokens: number;
}

/** Encodes trajectories for the policy and scores them once under the reference (the initial policy), in content order. */
export async function preparePolicyExamples(
  reference: LoadedModel,
  data: readonly Trajectory[],
  truncation: 'left' | 'right' = 'left',
): Promise<PolicyExample[]> {
  const trajectories = canonicalOrder(data);
  const ctx = reference.model.config.maxPositionEmbeddings;
  const seqs = trajectories.map((t) => encodeDialogue(reference, policyDialogue(t.task, t.turns), ctx, truncation));
  const ref = await turnLogprobValues(reference.model, seqs, reference.tokenizer.padTokenId);
  return trajectories.map((t, i) => ({
    sessionId: t.sessionId,
    seq: seqs[i]!,
    refSum: ref[i]!.flat().reduce((a, b) => a + b, 0),
    tokens: seqs[i]!.turns.reduce((n, x) => n + x.end - x.start, 0),
  }));
}

export function trajectoryPairs(
  trajectories: readonly Trajectory[],
  examples: readonly PolicyExample[],
  maxPairsPerTask: number | null,
): Pair<PolicyExample>[] {
  const byId = new Map(examples.map((e) => [e.sessionId, e]));
  return rewardPairs(scoredTrajectories(trajectories), maxPairsPerTask).map((p) => ({
    chosen: byId.get(p.chosen.id)!,
    rejected: byId.get(p.rejected.id)!,
  }));
}

/** Multi-turn DPO's training phase, as runs record it (TrainingStep.phase, progress). */
export const MTDPO_PHASE = 'mtdpo';

export function mtdpoPhase(
  policy: LoadedModel,
  pairs: readonly Pair<PolicyExample>[],
  c: TrainConfig,
  anchor?: PhaseAnchor,
): Phase {
  if (pairs.length === 0)
    throw new Error(`${MTDPO_PHASE}: no trajectory pairs (every task needs sessions with different rewards)`);
  const pad = policy.tokenizer.padTokenId;
  return minibatchPhase({
    name: MTDPO_PHASE,
    model: policy.model,
    items: holdOutFirst(pairs, c.heldOutShare),
    epochs: c.actorEpochs,
    updates: c.policyUpdates,
    peakLr: c.lr,
    config: c,
    anchor,
    shape: sequencePairShape,
    microStep: (micro) => {
      const seqs = [...micro.map((p) => p.chosen.seq), ...micro.map((p) => p.rejected.seq)];
      const lp = turnLogprobs(policy.model, seqs, pad);
      const perTurn = tf.sum(lp.logp, 1) as tf.Tensor1D;
      const sums = lp.owner.length
        ? (tf.unsortedSegmentSum(perTurn, tf.tensor1d(lp.owner, 'int32'), seqs.length) as tf.Tensor1D)
        : tf.zeros([seqs.length]);
      const n = micro.length;
      const out = dpoLoss(
        {
          policyChosen: sums.slice(0, n) as tf.Tensor1D,
          policyRejected: sums.slice(n, n) as tf.Tensor1D,
          refChosen: tf.tensor1d(micro.map((p) => p.chosen.refSum)),
          refRejected: tf.tensor1d(micro.map((p) => p.rejected.refSum)),
          chosenLengths: tf.tensor1d(micro.map((p) => p.chosen.tokens)),
        },
        c.beta,
        c.nllCoefficient,
      );
      return { loss: out.loss, metrics: { accuracy: out.accuracy.dataSync()[0]! } };
    },
  });
}
