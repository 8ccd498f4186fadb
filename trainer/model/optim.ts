// AdamW (decoupled weight decay, as torch.optim.AdamW), the warm-up + cosine learning-rate schedule and
// global gradient-norm clipping. State is keyed by parameter NAME (Hugging Face names for the decoder), not by
// position, so a checkpoint restores it onto the right tensors even if the variable list changes order.

import * as tf from '@tensorflow/tfjs';
import type { NamedTensor } from './safetensors.ts';

export interface AdamWOptions {
  /** Peak learning rate, or a schedule: lr(step) for step = 0, 1, ... (updates already applied). */
  lr: number | ((step: number) => number);
  beta1?: number; // default 0.9
  beta2?: number; // default 0.95 (the paper's setting)
  eps?: number; // default 1e-8
  weightDecay?: number; // default 0
  /** Which parameters decay. Default: matrices only (rank ≥ 2), not norms or biases. */
  decays?: (name: string, v: tf.Variable) => boolean;
}

export class AdamW {
  /** Updates applied so far. */
  step = 0;
  readonly params: ReadonlyMap<string, tf.Variable>;
  readonly state = new Map<string, { m: tf.Variable; v: tf.Variable }>();
  private readonly opts: Required<Omit<AdamWOptions, 'lr'>> & { lr: AdamWOptions['lr'] };

  constructor(params: ReadonlyMap<string, tf.Variable>, opts: AdamWOptions) {
    this.params = params;
    this.opts = {
      lr: opts.lr,
      beta1: opts.beta1 ?? 0.9,
      beta2: opts.beta2 ?? 0.95,
      eps: opts.eps ?? 1e-8,
      weightDecay: opts.weightDecay ?? 0,
      decays: opts.decays ?? ((_n, v) => v.rank >= 2),
    };
    for (const [name, p] of params) {
      this.state.set(name, {
        m: tf.variable(tf.zerosLike(p), false, `${p.name}/adam_m`),
        v: tf.variable(tf.zerosLike(p), false, `${p.name}/adam_v`),
      });
    }
  }

  /** Learning rate of the next update. */
  currentLr(): number {
    return typeof this.opts.lr === 'function' ? this.opts.lr(this.step) : this.opts.lr;
  }

  /**
   * One update. `grads` by parameter name; parameters without a gradient are left alone (their moments too).
   *   θ ← θ − lr·λ·θ;  m ← β₁m + (1−β₁)g;  v ← β₂v + (1−β₂)g²;  θ ← θ − lr · (m/(1−β₁ᵗ)) / (sqrt(v/(1−β₂ᵗ)) + ε)
   */
  apply(grads: ReadonlyMap<string, tf.Tensor>): void {
    const lr = this.currentLr();
    this.step += 1;
    const { beta1, beta2, eps, weightDecay } = this.opts;
    const bc1 = 1 - Math.pow(beta1, this.step);
    const bc2 = 1 - Math.pow(beta2, this.step);
    for (const [name, g] of grads) {
      const p = this.params.get(name);
      const s = this.state.get(name);
      if (!p || !s) throw new Error(`AdamW: gradient for unknown parameter ${name}`);
      tf.tidy(() => {
        const m = tf.add(tf.mul(s.m, beta1), tf.mul(g, 1 - beta1));
        const v = tf.add(tf.mul(s.v, beta2), tf.mul(tf.square(g), 1 - beta2));
        s.m.assign(m);
        s.v.assign(v);
        let next: tf.Tensor = p;
        if (weightDecay > 0 && this.opts.decays(name, p)) next = tf.mul(next, 1 - lr * weightDecay);
        const update = tf.div(tf.div(m, bc1), tf.add(tf.sqrt(tf.div(v, bc2)), eps));
        p.assign(tf.sub(next, tf.mul(update, lr)));
      });
    }
  }

  /** Moments as named tensors (exp_avg.<name>, exp_avg_sq.<name>, PyTorch's names), for checkpoints. */
  stateTensors(): Map<string, NamedTensor> {
    const out = new Map<string, NamedTensor>();
    for (const [name, s] of this.state) {
      out.set(`exp_avg.${name}`, { shape: s.m.shape, data: s.m.dataSync() as Float32Array });
      out.set(`exp_avg_sq.${name}`, { shape: s.v.shape, data: s.v.dataSync() as Float32Array });
    }
    return out;
  }

  /** Restores moments by name; every parameter must be present with the same shape. */
  loadStateTensors(tensors: ReadonlyMap<string, NamedTensor>, step: number): void {
    for (const [name, s] of this.state) {
      for (const [key, target] of [
        [`exp_avg.${name}`, s.m],
        [`exp_avg_sq.${name}`, s.v],
      ] as const) {
        const t = tensors.get(key);
        if (!t) throw new Error(`optimizer state has no ${key}`);
        if (t.shape.length !== target.shape.length || t.shape.some((d, i) => d !== target.shape[i])) {
          throw new Error(
            `optimizer state ${key} has shape [${t.shape.join(', ')}], parameter has [${target.shape.join(', ')}]`,
          );
        }
        tf.tidy(() => target.assign(tf.tensor(t.data, target.shape)));
      }
    }
    this.step = step;
  }

  dispose(): void {
    for (const s of this.state.values()) {
      s.m.dispose();
      s.v.dispose();
    }
    this.state.clear();
  }
}

/**
 * Linear warm-up then cosine decay to `minRatio`·peak (the paper: 3% warm-up, cosine to 0.1·lr).
 * lr(s) for the update that follows s completed ones: peak·(s+1)/warmup during warm-up (never 0), then
 * peak·(minRatio + (1−minRatio)·½(1 + cos(π·p))) with p = (s − warmup)/(total − warmup), and minRatio·peak
 * from `totalSteps` on. With `fromZero`, peak·s/warmup during warm-up: the first update runs at lr 0 (the official
 * trainer's schedule; docs/training.md, "Differences from the official code").
 */
export function warmupCosine(opts: {
  peakLr: number;
  warmupSteps: number;
  totalSteps: number;
  minRatio?: number;
  fromZero?: boolean;
}): (step: number) => number {
  const { peakLr, warmupSteps, totalSteps } = opts;
  const minRatio = opts.minRatio ?? 0.1;
  // fromZero: peak·s/warmup, as transformers' cosine_with_min_lr schedule (the official trainer's): update 0 at lr 0.
  const offset = opts.fromZero ? 0 : 1;
  return (s: number) => {
    if (s < warmupSteps) return (peakLr * (s + offset)) / warmupSteps;
    if (s >= totalSteps) return peakLr * minRatio;
    const p = (s - warmupSteps) / Math.max(1, totalSteps - warmupSteps);
    return peakLr * (minRatio + (1 - minRatio) * 0.5 * (1 + Math.cos(Math.PI * p)));
  };
}

/**
 * Scales gradients so their global L2 norm is at most maxNorm (torch.nn.utils.clip_grad_norm_: factor
 * min(1, maxNorm / (norm + 1e-6))). Returns new tensors (the caller disposes both maps) and the norm before clipping.
 */
export function clipByGlobalNorm(
  grads: ReadonlyMap<string, tf.Tensor>,
  maxNorm: number,
): { grads: Map<string, tf.Tensor>; norm: number } {
  const norm = tf.tidy(() => {
    const squares = [...grads.values()].map((g) => tf.sum(tf.square(g)));
    return squares.length ? tf.sqrt(tf.addN(squares)) : tf.scalar(0);
  });
  const n = norm.dataSync()[0]!;
  norm.dispose();
  const factor = Math.min(1, maxNorm / (n + 1e-6));
  const out = new Map<string, tf.Tensor>();
  for (const [k, g] of grads) out.set(k, factor < 1 ? tf.mul(g, factor) : tf.clone(g));
  return { grads: out, norm: n };
}
