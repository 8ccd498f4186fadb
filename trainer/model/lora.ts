// LoRA (Hu et al. 2021): a frozen linear layer W gets a trainable low-rank update,
//   y = x Wᵀ + (α/r) · (x Aᵀ) Bᵀ,   A ∈ R^{r×in} (random), B ∈ R^{out×r} (zeros),
// so a freshly added adapter leaves the model's outputs exactly unchanged. Adapters are saved in PEFT's
// layout (adapter_config.json + adapter_model.safetensors, tensor names
// base_model.model.<module>.lora_A.weight), so they load in PEFT, and can be merged into the base weights.

import { promises as fs } from 'node:fs';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import type { Decoder } from './decoder.ts';
import { DEFAULT_LORA_TARGETS, isLinearModule, LINEAR_MODULES } from './lora-modules.ts';
import { readSafetensors, writeFileAtomic, writeSafetensors, type NamedTensor } from './safetensors.ts';

export interface LoraOptions {
  rank: number;
  alpha: number;
  /** Module short names to adapt (PEFT's target_modules). Default: q_proj, k_proj, v_proj, o_proj. */
  targetModules?: string[];
  /** Seed of A's initialisation. */
  seed?: number;
}

export const ADAPTER_CONFIG = 'adapter_config.json';
export const ADAPTER_WEIGHTS = 'adapter_model.safetensors';
const PEFT_PREFIX = 'base_model.model.';

function targetNames(decoder: Decoder, targets: string[]): string[] {
  for (const t of targets) {
    if (!isLinearModule(t)) throw new Error(`unknown LoRA target module "${t}" (known: ${LINEAR_MODULES.join(', ')})`);
  }
  return [...decoder.params.keys()]
    .filter((n) => n.endsWith('.weight'))
    .map((n) => n.slice(0, -'.weight'.length))
    .filter((m) => targets.some((t) => m.endsWith(`.${t}`)));
}

/**
 * Adds adapters to every target module and freezes the base parameters (trainable = false), so
 * decoder.namedTrainableVariables() then holds only the adapters. A is initialised like PEFT's default
 * (Kaiming-uniform, bound 1/sqrt(in)), B with zeros.
 */
export function addLora(decoder: Decoder, opts: LoraOptions): void {
  if (decoder.adapters.size) throw new Error('this decoder already has LoRA adapters');
  if (!Number.isInteger(opts.rank) || opts.rank <= 0)
    throw new Error(`LoRA rank must be a positive integer, got ${opts.rank}`);
  const modules = targetNames(decoder, opts.targetModules ?? [...DEFAULT_LORA_TARGETS]);
  let seed = opts.seed ?? 0;
  for (const module of modules) {
    const w = decoder.param(module + '.weight');
    const [out, inp] = w.shape as [number, number];
    const bound = 1 / Math.sqrt(inp);
    const a = tf.tidy(() =>
      tf.variable(tf.randomUniform([opts.rank, inp], -bound, bound, 'float32', seed++), true, `${w.name}.lora_A`),
    );
    const b = tf.tidy(() => tf.variable(tf.zeros([out, opts.rank]), true, `${w.name}.lora_B`));
    decoder.adapters.set(module, { a, b, scale: opts.alpha / opts.rank });
  }
  for (const v of decoder.params.values()) v.trainable = false;
  loraSettings.set(decoder, {
    rank: opts.rank,
    alpha: opts.alpha,
    targetModules: opts.targetModules ?? [...DEFAULT_LORA_TARGETS],
  });
}

const loraSettings = new WeakMap<Decoder, { rank: number; alpha: number; targetModules: string[] }>();

/** Folds every adapter into its base weight (W ← W + (α/r)·B A), removes the adapters and unfreezes the base. */
export function mergeLora(decoder: Decoder): void {
  for (const [module, ad] of decoder.adapters) {
    const w = decoder.param(module + '.weight');
    tf.tidy(() => w.assign(tf.add(w, tf.mul(tf.matMul(ad.b, ad.a), ad.scale))));
    ad.a.dispose();
    ad.b.dispose();
  }
  decoder.adapters.clear();
  loraSettings.delete(decoder);
  for (const v of decoder.params.values()) v.trainable = true;
}

/**
 * Runs `fn` on the base model alone: the adapters are set aside for its duration and put back after, so a
 * frozen reference (the base without adapters) needs no second copy of the weights. Nothing else may use the
 * decoder meanwhile.
 */
export async function withoutLora<T>(decoder: Decoder, fn: () => Promise<T>): Promise<T> {
  const adapters = new Map(decoder.adapters);
  decoder.adapters.clear();
  try {
    return await fn();
  } finally {
    for (const [module, ad] of adapters) decoder.adapters.set(module, ad);
  }
}

/** Adapter weights under PEFT's names. */
export function loraTensors(decoder: Decoder): Map<string, NamedTensor> {
  const out = new Map<string, NamedTensor>();
  for (const [module, ad] of decoder.adapters) {
    out.set(`${PEFT_PREFIX}${module}.lora_A.weight`, { shape: [...ad.a.shape], data: ad.a.dataSync() as Float32Array });
    out.set(`${PEFT_PREFIX}${module}.lora_B.weight`, { shape: [...ad.b.shape], data: ad.b.dataSync() as Float32Array });
  }
  return out;
}

/**
 * Writes adapter_config.json and adapter_model.safetensors (PEFT layout) into dir. `baseModel`: the base's
 * directory or Hub id, recorded as PEFT does (base_model_name_or_path), which `sweetloop policy add --adapter`
 * checks against the server's model.
 */
export async function saveLora(dir: string, decoder: Decoder, baseModel?: string): Promise<void> {
  const s = loraSettings.get(decoder);
  if (!s || !decoder.adapters.size) throw new Error('this decoder has no LoRA adapters to save');
  await fs.mkdir(dir, { recursive: true });
  await writeSafetensors(path.join(dir, ADAPTER_WEIGHTS), loraTensors(decoder));
  const config = {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    ...(baseModel ? { base_model_name_or_path: baseModel } : {}),
    r: s.rank,
    lora_alpha: s.alpha,
    target_modules: s.targetModules,
    lora_dropout: 0,
    bias: 'none',
  };
  await writeFileAtomic(path.join(dir, ADAPTER_CONFIG), JSON.stringify(config, null, 2) + '\n');
}

/** Adds the adapters saved in dir (PEFT layout) to a decoder without adapters. */
export async function loadLora(dir: string, decoder: Decoder): Promise<void> {
  const cfgPath = path.join(dir, ADAPTER_CONFIG);
  let cfg: { peft_type?: string; r?: number; lora_alpha?: number; target_modules?: string[] };
  try {
    cfg = JSON.parse(await fs.readFile(cfgPath, 'utf8'));
  } catch (e) {
    throw new Error(`${cfgPath}: cannot read LoRA adapter config: ${(e as Error).message}`);
  }
  if (
    cfg.peft_type !== 'LORA' ||
    typeof cfg.r !== 'number' ||
    typeof cfg.lora_alpha !== 'number' ||
    !Array.isArray(cfg.target_modules)
  ) {
    throw new Error(`${cfgPath}: not a LoRA adapter config (need peft_type LORA, r, lora_alpha, target_modules)`);
  }
  addLora(decoder, { rank: cfg.r, alpha: cfg.lora_alpha, targetModules: cfg.target_modules });
  const tensors = await readSafetensors(path.join(dir, ADAPTER_WEIGHTS));
  for (const [module, ad] of decoder.adapters) {
    for (const [suffix, v] of [
      ['lora_A', ad.a],
      ['lora_B', ad.b],
    ] as const) {
      const key = `${PEFT_PREFIX}${module}.${suffix}.weight`;
      const t = tensors.get(key);
      if (!t) throw new Error(`${path.join(dir, ADAPTER_WEIGHTS)}: missing ${key}`);
      if (t.shape.join() !== v.shape.join())
        throw new Error(`${key}: shape [${t.shape}] does not match the model's [${v.shape}]`);
      tf.tidy(() => v.assign(tf.tensor(t.data, v.shape)));
    }
  }
}
