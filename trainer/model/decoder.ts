// A Llama-family causal decoder in TensorFlow.js, written to be read next to the paper's equations.
//
//   h⁰      = E[ids]                                                 token embedding, E ∈ R^{V×d}
//   for each layer ℓ:
//     a     = RMSNorm(hˡ; γ_attn)                                     RMSNorm(x) = x / sqrt(mean(x²) + ε) ⊙ γ
//     q,k,v = a W_qᵀ (+b_q), a W_kᵀ (+b_k), a W_vᵀ (+b_v)             H query heads, H_kv key/value heads
//     q,k   = RoPE(q, pos), RoPE(k, pos)                              rotary positions (rotate-half convention)
//     o     = softmax(q kᵀ / sqrt(d_h) + M) v                         M: causal + padding mask (0 or -1e9);
//                                                                     query head i reads key/value head i / (H/H_kv)
//     hˡ'   = hˡ + o W_oᵀ
//     m     = RMSNorm(hˡ'; γ_mlp)
//     hˡ⁺¹  = hˡ' + W_down (silu(m W_gateᵀ) ⊙ (m W_upᵀ))               SwiGLU MLP
//   logits  = RMSNorm(hᴸ; γ_final) W_headᵀ                            W_head = E when tie_word_embeddings
//
// Parameters are named exactly as in Hugging Face checkpoints (model.embed_tokens.weight,
// model.layers.0.self_attn.q_proj.weight, ..., model.norm.weight, lm_head.weight), with the same [out, in]
// layout, so a safetensors file maps onto `decoder.params` one to one. The tfjs variables themselves are named
// `<prefix>/<hf name>`: tfjs variable names are global to the process, so every Decoder gets its own prefix.
//
// ── Public interface (stable) ────────────────────────────────────────────────────────────────────────────
//
//   const model = new Decoder(config, { name?, seed?, weights? })
//   model.forward(ids /*[B,T] int32*/, opts?) → { logits: [B,T,V] (or [B,1,V] with lastOnly), cache? }
//   model.params: Map<hfName, tf.Variable>;  model.adapters: Map<moduleName, LoraAdapter> (see lora.ts)
//   model.dispose()
//
// KV cache: immutable and functional. A cache is a plain object of tensors; `forward` never modifies or frees
// the cache it is given, it returns a NEW cache that holds the old keys/values plus the new ones. The caller
// disposes the old one (`disposeCache`) once it no longer needs it. Typical batched generation:
//
//   let { logits, cache } = model.forward(promptIds, { attentionMask: promptMask, returnCache: true, lastOnly: true });
//   while (...) {
//     const next = sample(logits);                                   // [B,1] int32
//     const step = model.forward(next, { cache, lastOnly: true });    // mask of the new token defaults to 1
//     disposeCache(cache); logits.dispose(); ({ logits, cache } = step);
//   }
//
// Masks and positions. `attentionMask` [B,T] (1 = real token, 0 = padding) describes the NEW tokens only;
// the cache remembers the mask of everything before. Padding may sit anywhere (left padding is what batched
// generation wants). Positions default to "number of real tokens before this one in the row", i.e.
// cache.count + cumsum(mask) - 1, which gives left-padded rows the same positions as unpadded ones, exactly
// as Hugging Face does when it derives position_ids from the attention mask. Pass `positions` to override.
// Padding queries produce finite but meaningless logits: ignore them.

import * as tf from '@tensorflow/tfjs';
import type { ModelConfig } from './architecture.ts';

/** A LoRA adapter on one linear module: W x + scale · B (A x), A ∈ R^{r×in}, B ∈ R^{out×r}. Managed by lora.ts. */
export interface LoraAdapter {
  a: tf.Variable;
  b: tf.Variable;
  scale: number;
}

/** Keys/values of all past positions, per layer, after RoPE. Immutable: see the file header. */
export interface KVCache {
  /** Per layer: k, v of shape [B, H_kv, S, d_h]. */
  readonly layers: ReadonlyArray<{ readonly k: tf.Tensor4D; readonly v: tf.Tensor4D }>;
  /** [B, S] float32: 1 for a real token, 0 for padding. */
  readonly mask: tf.Tensor2D;
  /** [B] float32: real tokens seen so far in each row (the next token's default position). */
  readonly count: tf.Tensor1D;
  /** S, the number of cached positions (padding included). */
  readonly length: number;
  readonly batch: number;
}

export interface ForwardOptions {
  /** Keys/values of earlier positions; `ids` continue them. Not modified or disposed. */
  cache?: KVCache;
  /** Return a cache holding all positions (implied when `cache` is given). */
  returnCache?: boolean;
  /** [B,T] 1 = real token, 0 = padding, for the new tokens. Default: all ones. Any numeric dtype. */
  attentionMask?: tf.Tensor2D;
  /** [B,T] rotary positions of the new tokens. Default: derived from the mask (see the file header). */
  positions?: tf.Tensor2D;
  /** Only compute logits of the last position of each row ([B,1,V]): generation needs no more. */
  lastOnly?: boolean;
}

export interface ForwardResult {
  logits: tf.Tensor3D;
  /** Present when a cache was given or returnCache was set. */
  cache?: KVCache;
}

export interface DecoderOptions {
  /** Readable part of the variable prefix (made unique per process). */
  name?: string;
  /** Seed of the random initialisation (normal, std 0.02 as HF's initializer_range; norms 1; biases 0). */
  seed?: number;
  initStd?: number;
  /** Initial weights by HF name (all parameters required; see checkpoint.ts). Skips random init. */
  weights?: ReadonlyMap<string, { shape: readonly number[]; data: Float32Array }>;
  /** Variables are trainable (full fine-tuning) unless false (LoRA freezes the base). Default true. */
  trainable?: boolean;
}

/** The HF parameter names and [out, in] shapes of a configuration, in checkpoint order. */
export function parameterShapes(cfg: ModelConfig): Map<string, number[]> {
  const d = cfg.hiddenSize;
  const q = cfg.numHeads * cfg.headDim;
  const kv = cfg.numKvHeads * cfg.headDim;
  const f = cfg.intermediateSize;
  const s = new Map<string, number[]>();
  s.set('model.embed_tokens.weight', [cfg.vocabSize, d]);
  for (let l = 0; l < cfg.numLayers; l++) {
    const p = `model.layers.${l}.`;
    s.set(p + 'input_layernorm.weight', [d]);
    s.set(p + 'self_attn.q_proj.weight', [q, d]);
    s.set(p + 'self_attn.k_proj.weight', [kv, d]);
    s.set(p + 'self_attn.v_proj.weight', [kv, d]);
    if (cfg.qkvBias) {
      s.set(p + 'self_attn.q_proj.bias', [q]);
      s.set(p + 'self_attn.k_proj.bias', [kv]);
      s.set(p + 'self_attn.v_proj.bias', [kv]);
    }
    s.set(p + 'self_attn.o_proj.weight', [d, q]);
    if (cfg.outputBias) s.set(p + 'self_attn.o_proj.bias', [d]);
    s.set(p + 'post_attention_layernorm.weight', [d]);
    s.set(p + 'mlp.gate_proj.weight', [f, d]);
    s.set(p + 'mlp.up_proj.weight', [f, d]);
    s.set(p + 'mlp.down_proj.weight', [d, f]);
    if (cfg.mlpBias) {
      s.set(p + 'mlp.gate_proj.bias', [f]);
      s.set(p + 'mlp.up_proj.bias', [f]);
      s.set(p + 'mlp.down_proj.bias', [d]);
    }
  }
  s.set('model.norm.weight', [d]);
  if (!cfg.tieWordEmbeddings) s.set('lm_head.weight', [cfg.vocabSize, d]);
  return s;
}

/** Inverse frequencies of rotary positions, with Llama-3 (or linear) frequency scaling, in float32 as HF. */
export function ropeInverseFrequencies(cfg: ModelConfig): Float32Array {
  const half = cfg.headDim / 2;
  const inv = new Float32Array(half);
  for (let i = 0; i < half; i++) inv[i] = 1 / Math.pow(cfg.ropeTheta, (2 * i) / cfg.headDim);
  const rs = cfg.ropeScaling;
  if (rs.type === 'linear') {
    for (let i = 0; i < half; i++) inv[i] = inv[i]! / rs.factor;
  } else if (rs.type === 'llama3') {
    // Long wavelengths (low frequencies) are slowed down by `factor`, short ones kept, the band between
    // interpolated smoothly: Llama 3.1's context extension.
    const lowFreqWavelen = rs.originalMaxPositionEmbeddings / rs.lowFreqFactor;
    const highFreqWavelen = rs.originalMaxPositionEmbeddings / rs.highFreqFactor;
    for (let i = 0; i < half; i++) {
      const freq = inv[i]!;
      const wavelen = (2 * Math.PI) / freq;
      if (wavelen < highFreqWavelen) continue;
      if (wavelen > lowFreqWavelen) inv[i] = freq / rs.factor;
      else {
        const smooth =
          (rs.originalMaxPositionEmbeddings / wavelen - rs.lowFreqFactor) / (rs.highFreqFactor - rs.lowFreqFactor);
        inv[i] = (1 - smooth) * (freq / rs.factor) + smooth * freq;
      }
    }
  }
  return inv;
}

let instanceCounter = 0;
const MASKED = -1e9;

export class Decoder {
  readonly config: ModelConfig;
  /** Prefix of this instance's tfjs variable names, e.g. "decoder3_policy". */
  readonly prefix: string;
  /** Base parameters by Hugging Face name. */
  readonly params = new Map<string, tf.Variable>();
  /** LoRA adapters by module name (e.g. "model.layers.0.self_attn.q_proj"); empty unless lora.ts adds some. */
  readonly adapters = new Map<string, LoraAdapter>();
  private readonly invFreq: tf.Tensor1D;
  private readonly rotateHalf: tf.Tensor2D;
  private disposed = false;

  constructor(config: ModelConfig, opts: DecoderOptions = {}) {
    this.config = config;
    this.prefix = `decoder${++instanceCounter}_${(opts.name ?? 'model').replace(/[^A-Za-z0-9_-]/g, '_')}`;
    const shapes = parameterShapes(config);
    const trainable = opts.trainable ?? true;
    if (opts.weights) {
      const missing = [...shapes.keys()].filter((n) => !opts.weights!.has(n));
      if (missing.length) {
        throw new Error(
          `missing ${missing.length} parameter(s) for this config: ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', ...' : ''}`,
        );
      }
    }
    const std = opts.initStd ?? 0.02;
    let seed = opts.seed ?? 0;
    for (const [name, shape] of shapes) {
      let init: tf.Tensor;
      const given = opts.weights?.get(name);
      if (given) {
        if (given.shape.length !== shape.length || given.shape.some((v, i) => v !== shape[i])) {
          throw new Error(
            `parameter ${name} has shape [${given.shape.join(', ')}], expected [${shape.join(', ')}] from the config`,
          );
        }
        init = tf.tensor(given.data, shape, 'float32');
      } else if (name.endsWith('norm.weight')) init = tf.ones(shape);
      else if (name.endsWith('.bias')) init = tf.zeros(shape);
      else init = tf.randomNormal(shape, 0, std, 'float32', seed++);
      this.params.set(name, tf.variable(init, trainable, `${this.prefix}/${name}`));
      init.dispose();
    }
    this.invFreq = tf.tensor1d(ropeInverseFrequencies(config));
    const Dh = config.headDim;
    const half = Dh / 2;
    const r = new Float32Array(Dh * Dh);
    for (let j = 0; j < half; j++) {
      r[(j + half) * Dh + j] = -1; // out[j] = −x[j + half]
      r[j * Dh + j + half] = 1; // out[j + half] = x[j]
    }
    this.rotateHalf = tf.tensor2d(r, [Dh, Dh]);
  }

  /** Number of base parameters. */
  get numParameters(): number {
    let n = 0;
    for (const v of this.params.values()) n += v.size;
    return n;
  }

  /**
   * Variables with trainable = true, by name: base parameters under their HF names, LoRA adapters as
   * "<module>.lora_A.weight" / "<module>.lora_B.weight". Full fine-tuning: all base parameters; after
   * addLora (lora.ts) the base is frozen and only adapters remain. Hand this map to AdamW.
   */
  namedTrainableVariables(): Map<string, tf.Variable> {
    const out = new Map<string, tf.Variable>();
    for (const [name, v] of this.params) if (v.trainable) out.set(name, v);
    for (const [module, a] of this.adapters) {
      if (a.a.trainable) out.set(`${module}.lora_A.weight`, a.a);
      if (a.b.trainable) out.set(`${module}.lora_B.weight`, a.b);
    }
    return out;
  }

  /** Current base weights as named float32 arrays (HF names, [out, in] layout), e.g. for saving. */
  weightTensors(): Map<string, { shape: number[]; data: Float32Array }> {
    const out = new Map<string, { shape: number[]; data: Float32Array }>();
    for (const [name, v] of this.params) out.set(name, { shape: [...v.shape], data: v.dataSync() as Float32Array });
    return out;
  }

  param(name: string): tf.Variable {
    const v = this.params.get(name);
    if (!v) throw new Error(`${this.prefix}: no parameter ${name}`);
    return v;
  }

  /** y = x Wᵀ + b (+ LoRA). x: [N, in]. */
  private linear(x: tf.Tensor2D, module: string): tf.Tensor2D {
    let y: tf.Tensor2D = tf.matMul(x, this.param(module + '.weight'), false, true);
    const bias = this.params.get(module + '.bias');
    if (bias) y = tf.add(y, bias);
    const lora = this.adapters.get(module);
    if (lora) {
      const low = tf.matMul(x, lora.a, false, true);
      y = tf.add(y, tf.mul(tf.matMul(low, lora.b, false, true), lora.scale));
    }
    return y;
  }

  private rmsNorm(x: tf.Tensor2D, weightName: string): tf.Tensor2D {
    const meanSquare = tf.mean(tf.square(x), -1, true);
    return tf.mul(tf.mul(x, tf.rsqrt(tf.add(meanSquare, this.config.rmsNormEps))), this.param(weightName));
  }

  /**
   * Rotate-half RoPE: RoPE(x) = x ⊙ cos θ + rotate_half(x) ⊙ sin θ with rotate_half([x₁, x₂]) = [−x₂, x₁].
   * rotate_half is a fixed signed permutation, applied as x·R (exact: one ±1 term per output), a single fast
   * matmul instead of splitting and concatenating halves. x: [B, h, T, d_h]; cos, sin: [B, 1, T, d_h].
   */
  private rope(x: tf.Tensor4D, cos: tf.Tensor, sin: tf.Tensor): tf.Tensor4D {
    return tf.add(tf.mul(x, cos), tf.mul(tf.matMul(x, this.rotateHalf), sin));
  }

  forward(ids: tf.Tensor2D, opts: ForwardOptions = {}): ForwardResult {
    if (this.disposed) throw new Error(`${this.prefix} has been disposed`);
    if (ids.rank !== 2) throw new Error(`forward expects ids of shape [B, T], got [${ids.shape.join(', ')}]`);
    const [B, T] = ids.shape;
    const past = opts.cache;
    if (past && past.batch !== B) throw new Error(`cache holds ${past.batch} rows, ids have ${B}`);
    if (opts.attentionMask && (opts.attentionMask.shape[0] !== B || opts.attentionMask.shape[1] !== T)) {
      throw new Error(
        `attentionMask must be [${B}, ${T}] (the new tokens only), got [${opts.attentionMask.shape.join(', ')}]`,
      );
    }
    const cfg = this.config;
    const { numHeads: H, numKvHeads: Hkv, headDim: Dh, hiddenSize: d } = cfg;
    const G = H / Hkv;
    const P = past ? past.length : 0;
    const S = P + T;

    // tidy frees every intermediate; the returned logits and cache tensors survive.
    return tf.tidy(() => {
      const newMask = opts.attentionMask ? tf.cast(opts.attentionMask, 'float32') : tf.ones([B, T]);
      const pastCount = past ? past.count : tf.zeros([B]);
      // Position of a token = real tokens before it in its row (padding does not advance positions).
      const positions = opts.positions
        ? tf.cast(opts.positions, 'float32')
        : tf.relu(tf.sub(tf.add(tf.cumsum(newMask, 1), tf.expandDims(pastCount, 1)), 1));
      // RoPE angles θ[b,t,i] = pos[b,t] · invFreq[i], computed in float32 as HF does.
      const angles = tf.mul(tf.expandDims(positions, 2), tf.reshape(this.invFreq, [1, 1, Dh / 2]));
      const cos = tf.expandDims(tf.tile(tf.cos(angles), [1, 1, 2]), 1); // [B, 1, T, d_h]: both halves share θ
      const sin = tf.expandDims(tf.tile(tf.sin(angles), [1, 1, 2]), 1);

      // Additive mask M[b,1,t,s]: key s visible to query t iff it is a real token and s ≤ P + t.
      const keyMask = past ? tf.concat([past.mask, newMask], 1) : newMask; // [B, S]
      const causal = tf.lessEqual(
        tf.range(0, S, 1, 'int32').reshape([1, S]),
        tf.range(P, S, 1, 'int32').reshape([T, 1]),
      ); // [T, S]
      const visible = tf.mul(tf.cast(causal, 'float32').reshape([1, 1, T, S]), keyMask.reshape([B, 1, 1, S]));
      const maskBias = tf.mul(tf.sub(1, visible), MASKED);

      let h = tf.reshape(
        tf.gather(this.param('model.embed_tokens.weight'), tf.reshape(tf.cast(ids, 'int32'), [B * T])),
        [B * T, d],
      ) as tf.Tensor2D;
      const newLayers: { k: tf.Tensor4D; v: tf.Tensor4D }[] = [];
      for (let l = 0; l < cfg.numLayers; l++) {
        const p = `model.layers.${l}.`;
        // --- attention ---
        const a = this.rmsNorm(h, p + 'input_layernorm.weight');
        const heads = (x: tf.Tensor2D, n: number) =>
          tf.transpose(tf.reshape(x, [B, T, n, Dh]), [0, 2, 1, 3]) as tf.Tensor4D;
        const q = this.rope(heads(this.linear(a, p + 'self_attn.q_proj'), H), cos, sin);
        let k = this.rope(heads(this.linear(a, p + 'self_attn.k_proj'), Hkv), cos, sin);
        let v = heads(this.linear(a, p + 'self_attn.v_proj'), Hkv);
        if (past) {
          k = tf.concat([past.layers[l]!.k, k], 2);
          v = tf.concat([past.layers[l]!.v, v], 2);
        }
        if (past || opts.returnCache) newLayers.push({ k, v });
        // Grouped-query attention without copying k/v: the G query heads sharing a key/value head are
        // stacked along the query axis, [B, H_kv, G·T, d_h].
        const qGrouped = tf.reshape(q, [B, Hkv, G * T, Dh]);
        const scores = tf.reshape(tf.mul(tf.matMul(qGrouped, k, false, true), 1 / Math.sqrt(Dh)), [B, H, T, S]);
        const probs = tf.softmax(tf.add(scores, maskBias));
        const o = tf.reshape(tf.matMul(tf.reshape(probs, [B, Hkv, G * T, S]), v), [B, H, T, Dh]);
        const merged = tf.reshape(tf.transpose(o, [0, 2, 1, 3]), [B * T, H * Dh]) as tf.Tensor2D;
        h = tf.add(h, this.linear(merged, p + 'self_attn.o_proj'));
        // --- SwiGLU MLP ---
        const m = this.rmsNorm(h, p + 'post_attention_layernorm.weight');
        const gate = this.linear(m, p + 'mlp.gate_proj');
        const up = this.linear(m, p + 'mlp.up_proj');
        h = tf.add(h, this.linear(tf.mul(tf.mul(gate, tf.sigmoid(gate)), up), p + 'mlp.down_proj'));
      }
      let out = this.rmsNorm(h, 'model.norm.weight');
      let rows = T;
      if (opts.lastOnly && T > 1) {
        out = tf.reshape(tf.slice(tf.reshape(out, [B, T, d]), [0, T - 1, 0], [B, 1, d]), [B, d]);
        rows = 1;
      }
      const head = cfg.tieWordEmbeddings ? this.param('model.embed_tokens.weight') : this.param('lm_head.weight');
      const logits = tf.reshape(tf.matMul(out, head, false, true), [B, rows, cfg.vocabSize]) as tf.Tensor3D;
      if (!(past || opts.returnCache)) return { logits } as unknown as tf.TensorContainerObject;
      const cache: KVCache = {
        layers: newLayers,
        mask: keyMask as tf.Tensor2D,
        count: tf.add(pastCount, tf.sum(newMask, 1)) as tf.Tensor1D,
        length: S,
        batch: B,
      };
      return { logits, cache } as unknown as tf.TensorContainerObject;
    }) as unknown as ForwardResult;
  }

  /** Frees all variables (base and adapters). The instance is unusable afterwards. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const v of this.params.values()) v.dispose();
    for (const a of this.adapters.values()) {
      a.a.dispose();
      a.b.dispose();
    }
    this.params.clear();
    this.adapters.clear();
    this.invFreq.dispose();
    this.rotateHalf.dispose();
  }
}

/** Frees the tensors of a cache. */
export function disposeCache(cache: KVCache | undefined): void {
  if (!cache) return;
  for (const l of cache.layers) {
    l.k.dispose();
    l.v.dispose();
  }
  cache.mask.dispose();
  cache.count.dispose();
}

/** A new cache holding only the given rows (e.g. to drop finished sequences from a batch). */
export function selectCacheRows(cache: KVCache, rows: number[]): KVCache {
  return tf.tidy(() => {
    const idx = tf.tensor1d(rows, 'int32');
    return {
      layers: cache.layers.map((l) => ({
        k: tf.gather(l.k, idx) as tf.Tensor4D,
        v: tf.gather(l.v, idx) as tf.Tensor4D,
      })),
      mask: tf.gather(cache.mask, idx) as tf.Tensor2D,
      count: tf.gather(cache.count, idx) as tf.Tensor1D,
      length: cache.length,
      batch: rows.length,
    };
  });
}
