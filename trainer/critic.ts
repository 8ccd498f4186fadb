// The SWEET-RL critic (arXiv 2503.15478, Sec. 4.2). A decoder initialised from the policy that reads, in its
// prompt, the training-time information c (the hidden reference) as well as the dialogue. The advantage of an
// agent turn is the mean per-token log-ratio of the turn under the critic against a frozen copy of the initial
// critic; a trajectory's score is the sum of its turns' advantages, trained with Bradley-Terry on pairs of
// trajectories of the same task (the higher-reward one should score higher).
import * as tf from '@tensorflow/tfjs';
import type { TaskContent } from '../tasks/model.ts';
import type { DialogueTurn } from '../tasks/protocol.ts';
import type { Trajectory } from './data.ts';
import { bradleyTerryLoss, trajectoryScores, turnAdvantages } from './losses.ts';
import type { Decoder } from './model/decoder.ts';
import { completionLogprobValues } from './model/logprobs.ts';
import { preferencePairs, type Pair } from './pairs.ts';
import type { TrainConfig } from './presets.ts';
import { chunks, epochBatches, phaseOptimizer, type Phase } from './schedule.ts';
import { TrainStep } from './model/train-step.ts';
import {
  criticDialogue,
  encodeAction,
  encodeDialogue,
  loadModel,
  padTurns,
  turnLogprobs,
  turnLogprobValues,
  type EncodedDialogue,
  type LoadedModel,
} from './sequences.ts';

/** A trajectory as the critic reads it, with the frozen reference's log-probabilities of its agent turns. */
export interface CriticExample {
  sessionId: string;
  seq: EncodedDialogue;
  refTurnLogp: number[][];
}

/** A turn state o_t: the task and the dialogue before the agent's next message. */
export interface TurnState {
  task: TaskContent;
  turns: readonly DialogueTurn[];
}

let instances = 0;

export class Critic {
  private constructor(
    /** The critic being trained. */
    readonly current: LoadedModel,
    /** The frozen initial critic (pi_ref of the advantage). */
    readonly reference: LoadedModel,
  ) {}

  /**
   * The critic starts as a copy of `initialDir` (the policy the data came from); `currentDir` resumes a
   * critic trained earlier (its reference is still the initial copy).
   */
  static async load(initialDir: string, currentDir: string = initialDir): Promise<Critic> {
    const id = instances++;
    const reference = await loadModel(initialDir, `critic-ref-${id}`, false);
    try {
      const current = await loadModel(currentDir, `critic-${id}`, true);
      return new Critic(current, reference);
    } catch (err) {
      reference.model.dispose();
      throw err;
    }
  }

  get model(): Decoder {
    return this.current.model;
  }

  private get ctx(): number {
    return this.current.model.config.maxPositionEmbeddings;
  }

  private get pad(): number {
    return this.current.tokenizer.padTokenId;
  }

  /** Encodes trajectories for the critic and scores their turns under the frozen reference once. */
  async prepare(trajectories: readonly Trajectory[]): Promise<CriticExample[]> {
    const seqs = trajectories.map((t) => encodeDialogue(this.current, criticDialogue(t.task, t.turns), this.ctx));
    const ref = await turnLogprobValues(this.reference.model, seqs, this.pad);
    return trajectories.map((t, i) => ({ sessionId: t.sessionId, seq: seqs[i]!, refTurnLogp: ref[i]! }));
  }

  /** [B] sum of turn advantages of each example (differentiable in the critic's weights). */
  scores(examples: readonly CriticExample[]): tf.Tensor1D {
    return tf.tidy(() => {
      const lp = turnLogprobs(this.current.model, examples.map((e) => e.seq), this.pad);
      const ref = padTurns(examples.flatMap((e) => e.refTurnLogp), lp.logp.shape[1]);
      const adv = turnAdvantages(lp.logp, ref, lp.mask);
      if (lp.owner.length === 0) return tf.zeros([examples.length]) as tf.Tensor1D;
      return trajectoryScores(adv, tf.tensor1d(lp.owner, 'int32'), examples.length);
    });
  }

  /** Bradley-Terry loss of a batch of pairs, with how many pairs the critic already orders correctly. */
  loss(pairs: readonly Pair<CriticExample>[], beta: number): { loss: tf.Scalar; correct: tf.Scalar } {
    return tf.tidy(() => {
      const s = this.scores([...pairs.map((p) => p.chosen), ...pairs.map((p) => p.rejected)]);
      const chosen = s.slice(0, pairs.length);
      const rejected = s.slice(pairs.length, pairs.length);
      return { loss: bradleyTerryLoss(chosen, rejected, beta), correct: tf.sum(tf.cast(tf.greater(chosen, rejected), 'float32')) as tf.Scalar };
    });
  }

  /** Trajectory scores as numbers (no gradient). */
  async trajectoryScores(examples: readonly CriticExample[], batchSize = 4): Promise<number[]> {
    const out: number[] = [];
    for (let i = 0; i < examples.length; i += batchSize) {
      const s = this.scores(examples.slice(i, i + batchSize));
      out.push(...((await s.data()) as Float32Array));
      s.dispose();
    }
    return out;
  }

  /**
   * The critic's advantage of each candidate next message in a state: mean per-token log-ratio of the
   * candidate's tokens, critic against frozen reference, with the hidden information in the prompt.
   */
  async scoreCandidates(state: TurnState, candidates: readonly string[], batchSize = 8): Promise<number[]> {
    const prompt = criticDialogue(state.task, state.turns);
    const rows = candidates.map((c) => encodeAction(this.current, prompt, c, this.ctx));
    const [cur, ref] = await Promise.all([
      completionLogprobValues(this.current.model, rows, { padTokenId: this.pad, batchSize }),
      completionLogprobValues(this.reference.model, rows, { padTokenId: this.pad, batchSize }),
    ]);
    return rows.map((r, i) => {
      const n = r.completion.length;
      if (n === 0) return 0;
      let sum = 0;
      for (let j = 0; j < n; j++) sum += cur[i]![j]! - ref[i]![j]!;
      return sum / n;
    });
  }

  dispose(): void {
    this.current.model.dispose();
    this.reference.model.dispose();
  }
}

/** Pairs of trajectories of the same task for the critic: chosen has the strictly higher reward. */
export function criticPairs(trajectories: readonly Trajectory[], examples: readonly CriticExample[], maxPairsPerTask: number): Pair<CriticExample>[] {
  const byId = new Map(examples.map((e) => [e.sessionId, e]));
  return preferencePairs(
    trajectories.map((t) => ({ id: t.sessionId, groupId: t.taskId, reward: t.reward })),
    maxPairsPerTask,
  ).map((p) => ({ chosen: byId.get(p.chosen.id)!, rejected: byId.get(p.rejected.id)! }));
}

/** Bradley-Terry training of the critic over trajectory pairs: criticEpochs passes, batchSize pairs an update. */
export function criticPhase(critic: Critic, pairs: readonly Pair<CriticExample>[], c: TrainConfig): Phase {
  if (pairs.length === 0) throw new Error('critic: no trajectory pairs (every task needs sessions with different rewards)');
  const batches = epochBatches(pairs.length, c.batchSize, c.criticEpochs, c.seed, 'critic');
  const totalSteps = Math.min(batches.length, c.maxSteps ?? Infinity);
  const params = critic.model.namedTrainableVariables();
  const optimizer = phaseOptimizer(params, c.criticLr, totalSteps, c);
  const trainer = new TrainStep({ optimizer, maxGradNorm: c.maxGradNorm, accumulationSteps: Number.POSITIVE_INFINITY });
  return {
    name: 'critic',
    totalSteps,
    model: critic.model,
    optimizer,
    async step(index) {
      const batch = batches[index]!.map((i) => pairs[i]!);
      let loss = 0;
      let correct = 0;
      for (const micro of chunks(batch, c.microBatch)) {
        const weight = (micro.length / batch.length) * Math.ceil(batch.length / c.microBatch);
        let got = 0;
        const r = trainer.run(() => {
          const { loss: l, correct: k } = critic.loss(micro, c.criticBeta);
          got = k.dataSync()[0]!;
          return tf.mul(l, weight) as tf.Scalar;
        });
        loss += (r.loss / weight) * (micro.length / batch.length);
        correct += got;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      const u = trainer.flush()!;
      return { loss, accuracy: correct / batch.length, gradNorm: u.gradNorm, lr: u.lr };
    },
    dispose() {
      trainer.dispose();
      optimizer.dispose();
    },
  };
}
