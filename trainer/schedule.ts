// What every training phase shares: a seeded random stream whose whole state is one number (so a run's
// progress record can carry it), the batch order of each epoch as a pure function of (seed, phase, epoch), and
// the optimizer with the paper's schedule. Because batch k of a phase depends only on these, a resumed run
// replays exactly the updates an uninterrupted one would have made.
import * as tf from '@tensorflow/tfjs';
import type { Decoder } from './model/decoder.ts';
import { AdamW, warmupCosine } from './model/optim.ts';
import { TrainStep } from './model/train-step.ts';
import type { TrainConfig } from './presets.ts';
import { Rng } from '../tasks/random.ts';

export { Rng };

/** Batches of item indices for every update of a phase: `epochs` passes, each in its own seeded order. */
export function epochBatches(count: number, batchSize: number, epochs: number, seed: number, phase: string): number[][] {
  const batches: number[][] = [];
  for (let e = 0; e < epochs; e++) {
    const order = Rng.derive(seed, phase, 'epoch', e).shuffle(Array.from({ length: count }, (_, i) => i));
    for (let i = 0; i < order.length; i += batchSize) batches.push(order.slice(i, i + batchSize));
  }
  return batches;
}

/** AdamW with the paper's betas, warm-up and cosine decay over the phase's updates. */
export function phaseOptimizer(params: ReadonlyMap<string, tf.Variable>, peakLr: number, totalSteps: number, c: TrainConfig): AdamW {
  return new AdamW(params, {
    lr: warmupCosine({ peakLr, warmupSteps: Math.max(1, Math.round(totalSteps * c.warmupRatio)), totalSteps, minRatio: c.minLrRatio }),
    beta1: c.adamBeta1,
    beta2: c.adamBeta2,
    weightDecay: c.weightDecay,
  });
}

/** Splits a batch into micro-batches of at most `size` items. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** One training phase as runs.ts drives it: a fixed number of updates of one model, checkpointable between. */
export interface Phase {
  name: string;
  totalSteps: number;
  /** The weights this phase changes (saved in its checkpoints). */
  model: Decoder;
  optimizer: AdamW;
  /** Runs update `index` (0-based) and returns its metrics. */
  step(index: number): Promise<Record<string, number>>;
  dispose(): void;
}

/** What a minibatch phase's algorithm supplies: everything else about the update is the same for all of them. */
export interface MinibatchPhaseOptions<T> {
  /** The phase's name; also labels its seeded epoch orders (so it must stay stable across resumes). */
  name: string;
  model: Decoder;
  /** The training items; each update takes `config.batchSize` of them. */
  items: readonly T[];
  epochs: number;
  peakLr: number;
  config: TrainConfig;
  /**
   * The algorithm's loss on one micro-batch (the mean over its items), built inside the gradient tape, and
   * any per-micro-batch statistics (read them with dataSync inside this call).
   */
  microStep: (micro: T[]) => { loss: tf.Scalar; metrics?: Record<string, number> };
  /** Fixed figures reported with every update (after gradNorm and lr). */
  constantMetrics?: Record<string, number>;
}

/**
 * A phase of `epochs` seeded passes over `items`, one AdamW update per batch, each batch split into
 * micro-batches to bound memory. Every algorithm whose update is "mean loss over a batch" (SFT, DPO of both
 * kinds) shares this skeleton, so it lives here once and each algorithm's file shows only its loss.
 *
 * Each micro-batch's loss is scaled by its share of the batch times the number of micro-batches because
 * TrainStep averages the accumulated gradients over micro-batches: the update is then the gradient of the
 * batch mean however the batch is split (the last micro-batch may be short). The reported loss and metrics
 * are the batch means (metrics weighted by each micro-batch's share).
 */
export function minibatchPhase<T>(o: MinibatchPhaseOptions<T>): Phase {
  const c = o.config;
  const batches = epochBatches(o.items.length, c.batchSize, o.epochs, c.seed, o.name);
  const totalSteps = Math.min(batches.length, c.maxSteps ?? Infinity);
  const optimizer = phaseOptimizer(o.model.namedTrainableVariables(), o.peakLr, totalSteps, c);
  const trainer = new TrainStep({ optimizer, maxGradNorm: c.maxGradNorm, accumulationSteps: Number.POSITIVE_INFINITY });
  return {
    name: o.name,
    totalSteps,
    model: o.model,
    optimizer,
    async step(index) {
      const batch = batches[index]!.map((i) => o.items[i]!);
      const nMicro = Math.ceil(batch.length / c.microBatch);
      let loss = 0;
      const means: Record<string, number> = {};
      for (const micro of chunks(batch, c.microBatch)) {
        const share = micro.length / batch.length;
        let metrics: Record<string, number> = {};
        const r = trainer.run(() => {
          const out = o.microStep(micro);
          metrics = out.metrics ?? {};
          return tf.mul(out.loss, share * nMicro) as tf.Scalar;
        });
        loss += r.loss / nMicro;
        for (const [k, v] of Object.entries(metrics)) means[k] = (means[k] ?? 0) + v * share;
        // Lets the event loop run (progress output, signals) between micro-batches of a long update.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      const u = trainer.flush()!;
      return { loss, ...means, gradNorm: u.gradNorm, lr: u.lr, ...o.constantMetrics };
    },
    dispose() {
      trainer.dispose();
      optimizer.dispose();
    },
  };
}
