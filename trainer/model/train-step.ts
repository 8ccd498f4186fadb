// A generic training step: loss over a micro-batch → gradients → (accumulate) → clip → AdamW.
// Works for full fine-tuning (all decoder parameters) and LoRA (adapters only): the caller passes the named
// variables to train. Every tensor made here is freed here, so tf.memory().numTensors is the same after each
// optimizer update (test/model/train.test.ts checks it over many steps).

import * as tf from '@tensorflow/tfjs';
import { AdamW, clipByGlobalNorm } from './optim.ts';

export interface TrainStepOptions {
  optimizer: AdamW;
  /** Global gradient-norm clip (the paper: 1.0). Infinity or undefined: no clipping. */
  maxGradNorm?: number;
  /** Micro-batches whose gradients are averaged into one update. Default 1. */
  accumulationSteps?: number;
}

export interface StepResult {
  /** Loss of this micro-batch. */
  loss: number;
  /** Whether this call applied an optimizer update (every accumulationSteps-th call). */
  applied: boolean;
  /** Global gradient norm of the averaged gradients, before clipping (only when applied). */
  gradNorm?: number;
  /** Learning rate used (only when applied). */
  lr?: number;
}

export class TrainStep {
  private readonly vars: ReadonlyMap<string, tf.Variable>;
  private readonly byVarName = new Map<string, string>();
  private accumulated = new Map<string, tf.Tensor>();
  private micro = 0;

  constructor(private readonly opts: TrainStepOptions) {
    this.vars = opts.optimizer.params;
    for (const [name, v] of this.vars) this.byVarName.set(v.name, name);
  }

  /** Micro-batches accumulated since the last update. */
  get pending(): number {
    return this.micro;
  }

  /** Runs forward+backward of `lossFn` (which must return a scalar) and updates when enough micro-batches are in. */
  run(lossFn: () => tf.Scalar): StepResult {
    const { value, grads } = tf.variableGrads(lossFn, [...this.vars.values()]);
    const loss = value.dataSync()[0]!;
    value.dispose();
    for (const [varName, g] of Object.entries(grads)) {
      const name = this.byVarName.get(varName)!;
      const prev = this.accumulated.get(name);
      if (prev) {
        this.accumulated.set(name, tf.add(prev, g));
        prev.dispose();
        g.dispose();
      } else this.accumulated.set(name, g);
    }
    this.micro += 1;
    if (this.micro < (this.opts.accumulationSteps ?? 1)) return { loss, applied: false };
    return { loss, applied: true, ...this.update() };
  }

  /** Applies the accumulated gradients now (e.g. at the end of an epoch with a partial accumulation). */
  flush(): { gradNorm: number; lr: number } | undefined {
    return this.micro > 0 ? this.update() : undefined;
  }

  private update(): { gradNorm: number; lr: number } {
    const n = this.micro;
    const mean = new Map<string, tf.Tensor>();
    for (const [k, g] of this.accumulated) mean.set(k, n === 1 ? g : tf.div(g, n));
    const clipped = clipByGlobalNorm(mean, this.opts.maxGradNorm ?? Infinity);
    const lr = this.opts.optimizer.currentLr();
    this.opts.optimizer.apply(clipped.grads);
    for (const g of clipped.grads.values()) g.dispose();
    for (const g of mean.values()) g.dispose();
    if (n !== 1) for (const g of this.accumulated.values()) g.dispose();
    this.accumulated = new Map();
    this.micro = 0;
    return { gradNorm: clipped.norm, lr };
  }

  /** Frees accumulated gradients (the optimizer is the caller's). */
  dispose(): void {
    for (const g of this.accumulated.values()) g.dispose();
    this.accumulated.clear();
    this.micro = 0;
  }
}
