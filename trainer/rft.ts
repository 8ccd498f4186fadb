// Rejection fine-tuning, the paper's simplest baseline: supervised fine-tuning (token NLL) on the agent turns
// of the successful trajectories only (reward >= rftThreshold; with the default 1, every test passed).
import * as tf from '@tensorflow/tfjs';
import type { Trajectory } from './data.ts';
import { tokenNll } from './losses.ts';
import { TrainStep } from './model/train-step.ts';
import type { TrainConfig } from './presets.ts';
import { chunks, epochBatches, phaseOptimizer, type Phase } from './schedule.ts';
import { encodeDialogue, policyDialogue, turnLogprobs, type EncodedDialogue, type LoadedModel } from './sequences.ts';

export function successfulTrajectories(trajectories: readonly Trajectory[], threshold: number): Trajectory[] {
  return trajectories.filter((t) => t.reward >= threshold);
}

export function sftPhase(policy: LoadedModel, trajectories: readonly Trajectory[], c: TrainConfig): Phase {
  const kept = successfulTrajectories(trajectories, c.rftThreshold);
  if (kept.length === 0) throw new Error(`rft: no trajectory has reward >= ${c.rftThreshold}: nothing to imitate`);
  const ctx = policy.model.config.maxPositionEmbeddings;
  const seqs: EncodedDialogue[] = kept.map((t) => encodeDialogue(policy, policyDialogue(t.task, t.turns), ctx));
  const batches = epochBatches(seqs.length, c.batchSize, c.sftEpochs, c.seed, 'sft');
  const totalSteps = Math.min(batches.length, c.maxSteps ?? Infinity);
  const optimizer = phaseOptimizer(policy.model.namedTrainableVariables(), c.lr, totalSteps, c);
  const trainer = new TrainStep({ optimizer, maxGradNorm: c.maxGradNorm, accumulationSteps: Number.POSITIVE_INFINITY });
  const pad = policy.tokenizer.padTokenId;
  return {
    name: 'sft',
    totalSteps,
    model: policy.model,
    optimizer,
    async step(index) {
      const batch = batches[index]!.map((i) => seqs[i]!);
      const nMicro = Math.ceil(batch.length / c.microBatch);
      let loss = 0;
      for (const micro of chunks(batch, c.microBatch)) {
        const share = micro.length / batch.length;
        const r = trainer.run(() => {
          const lp = turnLogprobs(policy.model, micro, pad);
          return tf.mul(tokenNll(lp.logp, lp.mask), share * nMicro) as tf.Scalar;
        });
        loss += r.loss / nMicro;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      const u = trainer.flush()!;
      return { loss, gradNorm: u.gradNorm, lr: u.lr, dialogues: kept.length };
    },
    dispose() {
      trainer.dispose();
      optimizer.dispose();
    },
  };
}
