// Rejection fine-tuning, the paper's simplest baseline: supervised fine-tuning (token NLL) on the agent turns
// of the successful trajectories only (reward >= rftThreshold; with the default 1, every test passed). Each
// dialogue's mean NLL weighs the same, however a batch is split into micro-batches (losses.ts dialogueNll).
import type { Trajectory } from './data.ts';
import { dialogueNll } from './losses.ts';
import { canonicalOrder, holdOutFirst } from './pairs.ts';
import type { TrainConfig } from './presets.ts';
import { minibatchPhase, type Phase, type PhaseAnchor } from './schedule.ts';
import { encodeDialogue, policyDialogue, turnLogprobs, type EncodedDialogue, type LoadedModel } from './sequences.ts';

/** The trajectories to imitate, in content order (never the database's row order). */
export function successfulTrajectories(trajectories: readonly Trajectory[], threshold: number): Trajectory[] {
  return canonicalOrder(trajectories.filter((t) => t.reward >= threshold));
}

/** Rejection fine-tuning's training phase, as runs record it (TrainingStep.phase, progress). */
export const RFT_PHASE = 'rft';

export function rftPhase(
  policy: LoadedModel,
  trajectories: readonly Trajectory[],
  c: TrainConfig,
  anchor?: PhaseAnchor,
): Phase {
  const kept = successfulTrajectories(trajectories, c.rftThreshold);
  if (kept.length === 0)
    throw new Error(`${RFT_PHASE}: no trajectory has reward >= ${c.rftThreshold}: nothing to imitate`);
  const ctx = policy.model.config.maxPositionEmbeddings;
  const seqs: EncodedDialogue[] = holdOutFirst(kept, c.heldOutShare).map((t) =>
    encodeDialogue(policy, policyDialogue(t.task, t.turns), ctx, c.truncation),
  );
  const pad = policy.tokenizer.padTokenId;
  return minibatchPhase({
    name: RFT_PHASE,
    model: policy.model,
    items: seqs,
    epochs: c.sftEpochs,
    updates: c.policyUpdates,
    peakLr: c.lr,
    config: c,
    anchor,
    shape: (seq) => ({ rows: 1, tokens: seq.ids.length }),
    microStep: (micro) => {
      const lp = turnLogprobs(policy.model, micro, pad);
      return { loss: dialogueNll(lp.logp, lp.mask, lp.owner, micro.length) };
    },
    constantMetrics: { dialogues: kept.length },
  });
}
