// What every training phase shares: a seeded random stream whose whole state is one number (so a run's
// progress record can carry it), the batch order of each epoch as a pure function of (seed, phase, epoch), and
// the optimizer with the paper's schedule. Because batch k of a phase depends only on these, a resumed run
// replays exactly the updates an uninterrupted one would have made.
import type * as tf from '@tensorflow/tfjs';
import { AdamW, warmupCosine } from './model/optim.ts';
import type { TrainConfig } from './presets.ts';
import { fnv1a } from '../tasks/library.ts';

/** mulberry32 with its 32-bit state exposed. */
export class Rng {
  constructor(public state: number) {
    this.state = state >>> 0;
  }

  static derive(seed: number, ...labels: (string | number)[]): Rng {
    return new Rng(fnv1a(`${seed}:${labels.join(':')}`));
  }

  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  shuffle<T>(xs: T[]): T[] {
    for (let i = xs.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [xs[i], xs[j]] = [xs[j]!, xs[i]!];
    }
    return xs;
  }
}

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
  model: import('./model/decoder.ts').Decoder;
  optimizer: AdamW;
  /** Runs update `index` (0-based) and returns its metrics. */
  step(index: number): Promise<Record<string, number>>;
  dispose(): void;
}
