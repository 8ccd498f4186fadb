// What every training phase shares: a seeded random stream whose whole state is one number (so a run's
// progress record can carry it), the batch order of each epoch as a pure function of (seed, phase, epoch), and
// the optimizer with the paper's schedule. Because batch k of a phase depends only on these, a resumed run
// replays exactly the updates an uninterrupted one would have made.
import * as tf from '@tensorflow/tfjs';
import type { Decoder } from './model/decoder.ts';
import { AdamW, warmupCosine } from './model/optim.ts';
import { TrainStep } from './model/train-step.ts';
import { DEFAULT_MICRO_BATCH_CELLS, type TrainConfig } from './presets.ts';
import { Rng } from '../tasks/random.ts';

export { Rng };

/** Batches of item indices for every update of a phase: `epochs` passes, each in its own seeded order. */
export function epochBatches(
  count: number,
  batchSize: number,
  epochs: number,
  seed: number,
  phase: string,
): number[][] {
  const batches: number[][] = [];
  for (let e = 0; e < epochs; e++) {
    const order = Rng.derive(seed, phase, 'epoch', e).shuffle(Array.from({ length: count }, (_, i) => i));
    for (let i = 0; i < order.length; i += batchSize) batches.push(order.slice(i, i + batchSize));
  }
  return batches;
}

/** AdamW with the paper's betas, warm-up and cosine decay over the phase's updates. */
export function phaseOptimizer(
  params: ReadonlyMap<string, tf.Variable>,
  peakLr: number,
  totalSteps: number,
  c: TrainConfig,
): AdamW {
  return new AdamW(params, {
    lr: c.warmupFromZero
      ? // the official trainer (train_dpo.py): ceil(ratio x updates) warm-up updates from lr 0
        warmupCosine({
          peakLr,
          warmupSteps: Math.ceil(totalSteps * c.warmupRatio),
          totalSteps,
          minRatio: c.minLrRatio,
          fromZero: true,
        })
      : warmupCosine({
          peakLr,
          warmupSteps: Math.max(1, Math.round(totalSteps * c.warmupRatio)),
          totalSteps,
          minRatio: c.minLrRatio,
        }),
    beta1: c.adamBeta1,
    beta2: c.adamBeta2,
    weightDecay: c.weightDecay,
  });
}

/** How much of a forward pass one training item makes: its rows (2 for a pair) and its longest row's tokens. */
export interface ItemShape {
  rows: number;
  tokens: number;
}

/** The shape of a chosen/rejected pair of sequences (the critic's and multi-turn DPO's items). */
export function sequencePairShape(p: {
  chosen: { seq: { ids: { length: number } } };
  rejected: { seq: { ids: { length: number } } };
}): ItemShape {
  return { rows: 2, tokens: Math.max(p.chosen.seq.ids.length, p.rejected.seq.ids.length) };
}

/**
 * Splits a batch, in order, into micro-batches of at most `c.microBatch` items, cutting earlier where the
 * micro-batch's rows x (longest row's tokens)^2 would pass `c.microBatchCells` (an item over it alone gets a
 * micro-batch of its own). Why: on tfjs-wasm the attention scores kept for the backward pass (rows x heads x
 * T^2 floats a layer) fill WebAssembly memory, which ends at 4 GB; the heap sizes measured on the starter are
 * in docs/training.md ("Memory").
 */
export function microBatches<T>(
  batch: readonly T[],
  c: Pick<TrainConfig, 'microBatch' | 'microBatchCells'>,
  shape: (item: T) => ItemShape,
): T[][] {
  const cells = c.microBatchCells ?? DEFAULT_MICRO_BATCH_CELLS; // runs stored before the cap existed lack it
  const out: T[][] = [];
  let current: T[] = [];
  let rows = 0;
  let longest = 0;
  for (const item of batch) {
    const s = shape(item);
    const nextRows = rows + s.rows;
    const nextLongest = Math.max(longest, s.tokens);
    if (current.length > 0 && (current.length >= c.microBatch || nextRows * nextLongest * nextLongest > cells)) {
      out.push(current);
      current = [];
      rows = s.rows;
      longest = s.tokens;
    } else {
      rows = nextRows;
      longest = nextLongest;
    }
    current.push(item);
  }
  if (current.length > 0) out.push(current);
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

/**
 * A second term of every update of a phase (trainer/rehearsal.ts): its loss for update `index`, added once to
 * the batch mean, computed in one forward pass of its own.
 */
export interface PhaseAnchor {
  loss: (index: number) => { loss: tf.Scalar; metrics?: Record<string, number> };
}

/** What a minibatch phase's algorithm supplies: everything else about the update is the same for all of them. */
export interface MinibatchPhaseOptions<T> {
  /** The phase's name; also labels its seeded epoch orders (so it must stay stable across resumes). */
  name: string;
  model: Decoder;
  /** The training items; each update takes `config.batchSize` of them. */
  items: readonly T[];
  epochs: number;
  /** Exactly this many updates, passes repeated or cut to fit (TrainConfig.policyUpdates); absent or null: `epochs` passes. */
  updates?: number | null;
  peakLr: number;
  config: TrainConfig;
  /**
   * The algorithm's loss on one micro-batch (the mean over its items), built inside the gradient tape, and
   * any per-micro-batch statistics (read them with dataSync inside this call).
   */
  microStep: (micro: T[]) => { loss: tf.Scalar; metrics?: Record<string, number> };
  /** Rows and longest row of an item's forward pass: micro-batches are cut to `config.microBatchCells`. */
  shape: (item: T) => ItemShape;
  /** Fixed figures reported with every update (after gradNorm and lr). */
  constantMetrics?: Record<string, number>;
  /** A term added to every update's loss (rehearsal); absent: the batch mean alone. */
  anchor?: PhaseAnchor;
}

/**
 * A phase of `epochs` seeded passes over `items`, one AdamW update per batch, each batch split into
 * micro-batches to bound memory. Every algorithm whose update is "mean loss over a batch" (SFT, DPO of both
 * kinds) shares this skeleton, so it lives here once and each algorithm's file shows only its loss.
 *
 * Each micro-batch's loss is scaled by its share of the batch times the number of forward passes because
 * TrainStep averages the accumulated gradients over them: the update is then the gradient of the batch mean
 * (plus the anchor's term, one pass of its own) however the batch is split (the last micro-batch may be
 * short). The reported loss and metrics are the batch means (metrics weighted by each micro-batch's share),
 * the anchor's term included in the loss.
 */
export function minibatchPhase<T>(o: MinibatchPhaseOptions<T>): Phase {
  const c = o.config;
  const perEpoch = Math.ceil(o.items.length / c.batchSize);
  const epochs = o.updates ? Math.ceil(o.updates / Math.max(1, perEpoch)) : o.epochs;
  const batches = epochBatches(o.items.length, c.batchSize, epochs, c.seed, o.name);
  const totalSteps = Math.min(batches.length, o.updates ?? Infinity, c.maxSteps ?? Infinity);
  const optimizer = phaseOptimizer(o.model.namedTrainableVariables(), o.peakLr, totalSteps, c);
  const trainer = new TrainStep({ optimizer, maxGradNorm: c.maxGradNorm, accumulationSteps: Number.POSITIVE_INFINITY });
  return {
    name: o.name,
    totalSteps,
    model: o.model,
    optimizer,
    async step(index) {
      const batch = batches[index]!.map((i) => o.items[i]!);
      const micros = microBatches(batch, c, o.shape);
      const passes = micros.length + (o.anchor ? 1 : 0);
      let loss = 0;
      const means: Record<string, number> = {};
      for (const micro of micros) {
        const share = micro.length / batch.length;
        let metrics: Record<string, number> = {};
        const r = trainer.run(() => {
          const out = o.microStep(micro);
          metrics = out.metrics ?? {};
          return tf.mul(out.loss, share * passes) as tf.Scalar;
        });
        loss += r.loss / passes;
        for (const [k, v] of Object.entries(metrics)) means[k] = (means[k] ?? 0) + v * share;
        // Lets the event loop run (progress output, signals) between micro-batches of a long update.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      if (o.anchor) {
        const anchor = o.anchor;
        let metrics: Record<string, number> = {};
        const r = trainer.run(() => {
          const out = anchor.loss(index);
          metrics = out.metrics ?? {};
          return tf.mul(out.loss, passes) as tf.Scalar;
        });
        loss += r.loss / passes;
        Object.assign(means, metrics);
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
