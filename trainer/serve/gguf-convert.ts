// trainer/serve/: serving a policy (engine contract, llama.cpp engine, GGUF files, OpenAI-compatible server).
// Files here may import tasks/, prisma/ and trainer/ only.
//
// Hugging Face checkpoints (trainer/model/checkpoint.ts) and PEFT LoRA adapters (trainer/model/lora.ts) to
// GGUF files llama.cpp loads, following what llama.cpp's own convert_hf_to_gguf.py writes for a Llama:
//   - hyperparameters as UINT32 (llama.cpp rejects INT32), the RMS epsilon and rope base as FLOAT32;
//   - tensors under llama.cpp's names in ggml order (an HF [out, in] matrix is ne = [in, out], same bytes);
//   - llama.cpp's "llama" graph rotates interleaved pairs (GPT-J style) where HF rotates halves (NeoX style),
//     so the rows of q_proj and k_proj (and their biases, and LoRA B of those modules) are permuted per head:
//     new row 2i+j of a head = old row j·(d_h/2)+i. Qwen2 uses llama.cpp's NeoX graph: no permutation;
//   - norms, biases and rope frequency factors stay F32 (ggml's norm kernels want F32);
//   - tied embeddings: no output.weight (llama.cpp then reads token_embd);
//   - rope scaling (linear, llama3) as a rope_freqs tensor of per-frequency divisors, which llama.cpp applies
//     to the Llama graph exactly as HF scales its inverse frequencies;
//   - the byte-level BPE tokenizer as tokenizer.ggml.model "gpt2" + tokens + merges (gguf-tokenizer.ts).
// Conversions are cached: the output's sidecar (<out>.json) records the source's sha256 and the converter
// version, and a matching sidecar skips the work, so a deploy converts once.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { ModelConfig } from '../model/architecture.ts';
import { checkpointSha256, readConfig } from '../model/checkpoint.ts';
import { parameterShapes, ropeInverseFrequencies } from '../model/decoder.ts';
import { ADAPTER_CONFIG, ADAPTER_WEIGHTS } from '../model/lora.ts';
import {
  encodeFloats,
  readSafetensors,
  readSafetensorsDir,
  writeFileAtomic,
  type NamedTensor,
} from '../model/safetensors.ts';
import { gguf, GgmlType, writeGguf, type GgmlTypeId, type GgufTensorSource, type GgufValue } from './gguf.ts';
import { readOptionalJson, tokenizerMetadata, type Json } from './gguf-tokenizer.ts';
import { validateAdapterGguf, validateModelGguf } from './gguf-validate.ts';

/** Bumped whenever the bytes this converter writes change, so older cached files are rewritten. */
export const GGUF_CONVERTER_VERSION = 1;

export type GgufDtype = 'F32' | 'F16';

export interface ConvertOptions {
  /** Storage of the matrices (embedding, projections, head); norms, biases and rope factors are always F32. */
  dtype?: GgufDtype;
  /**
   * Metadata changed after the checkpoint's own keys are in (writeCheckpointGguf only): keys set (added or
   * replaced, e.g. a general.name) and keys dropped. The tests write foreign models and malformed files this way.
   */
  metadata?: { set?: readonly [string, GgufValue][]; drop?: readonly string[] };
}

export interface ConvertResult {
  path: string;
  /** checkpointSha256 of the source directory. */
  sourceSha256: string;
  /** False when an earlier conversion of the same source was reused. */
  converted: boolean;
}

/** llama.cpp's architecture name for a config; other families are refused before anything is written. */
export function ggufArchitecture(cfg: ModelConfig): 'llama' | 'qwen2' {
  if (cfg.mlpBias)
    throw new Error(
      'GGUF conversion: mlp_bias is not supported (llama.cpp has no gate/up/down biases for this architecture)',
    );
  if (cfg.modelType === 'qwen2') {
    if (cfg.ropeScaling.type !== 'none')
      throw new Error('GGUF conversion: rope_scaling on a qwen2 model is not supported');
    return 'qwen2';
  }
  return 'llama';
}

/** HF module name (without ".weight"/".bias") → llama.cpp tensor base name, or undefined if unknown. */
export function ggufModuleName(hfModule: string): string | undefined {
  if (hfModule === 'model.embed_tokens') return 'token_embd';
  if (hfModule === 'model.norm') return 'output_norm';
  if (hfModule === 'lm_head') return 'output';
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(hfModule);
  if (!m) return undefined;
  const part = LAYER_NAMES[m[2]!];
  return part === undefined ? undefined : `blk.${m[1]}.${part}`;
}

const LAYER_NAMES: Record<string, string> = {
  input_layernorm: 'attn_norm',
  'self_attn.q_proj': 'attn_q',
  'self_attn.k_proj': 'attn_k',
  'self_attn.v_proj': 'attn_v',
  'self_attn.o_proj': 'attn_output',
  post_attention_layernorm: 'ffn_norm',
  'mlp.gate_proj': 'ffn_gate',
  'mlp.up_proj': 'ffn_up',
  'mlp.down_proj': 'ffn_down',
};

/**
 * Permutes the rows of a [heads·d_h, cols] matrix (cols = 1 for a bias) from HF's rotate-half layout to
 * llama.cpp's interleaved-pair layout (convert_hf_to_gguf's `permute`).
 */
export function permuteRopeRows(data: Float32Array, heads: number, cols: number): Float32Array {
  const rows = data.length / cols;
  if (!Number.isInteger(rows) || rows % heads !== 0 || (rows / heads) % 2 !== 0) {
    throw new Error(
      `permuteRopeRows: ${data.length} values do not form ${heads} heads of an even size with ${cols} columns`,
    );
  }
  const dh = rows / heads;
  const half = dh / 2;
  const out = new Float32Array(data.length);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const src = (h * dh + j * half + i) * cols;
        const dst = (h * dh + 2 * i + j) * cols;
        out.set(data.subarray(src, src + cols), dst);
      }
    }
  }
  return out;
}

/** Heads whose rows need the RoPE permutation for this module (llama architecture only). */
function ropeHeads(cfg: ModelConfig, hfModule: string): number | undefined {
  if (ggufArchitecture(cfg) !== 'llama') return undefined;
  if (hfModule.endsWith('.self_attn.q_proj')) return cfg.numHeads;
  if (hfModule.endsWith('.self_attn.k_proj')) return cfg.numKvHeads;
  return undefined;
}

/** Per-frequency divisors that turn llama.cpp's unscaled θ into HF's scaled inverse frequencies. */
function ropeFreqFactors(cfg: ModelConfig): Float32Array {
  const scaled = ropeInverseFrequencies(cfg);
  const base = ropeInverseFrequencies({ ...cfg, ropeScaling: { type: 'none' } });
  return Float32Array.from(base, (b, i) => b / scaled[i]!);
}

// ── model ──────────────────────────────────────────────────────────────────────────────────────────────

/** The general.* and <arch>.* keys of a model file. */
export function modelMetadata(cfg: ModelConfig, name: string, dtype: GgufDtype): [string, GgufValue][] {
  const arch = ggufArchitecture(cfg);
  return [
    ['general.architecture', gguf.str(arch)],
    ['general.name', gguf.str(name)],
    ['general.alignment', gguf.u32(32)],
    ['general.file_type', gguf.u32(dtype === 'F16' ? 1 : 0)],
    [`${arch}.context_length`, gguf.u32(cfg.maxPositionEmbeddings)],
    [`${arch}.embedding_length`, gguf.u32(cfg.hiddenSize)],
    [`${arch}.block_count`, gguf.u32(cfg.numLayers)],
    [`${arch}.feed_forward_length`, gguf.u32(cfg.intermediateSize)],
    [`${arch}.attention.head_count`, gguf.u32(cfg.numHeads)],
    [`${arch}.attention.head_count_kv`, gguf.u32(cfg.numKvHeads)],
    [`${arch}.attention.key_length`, gguf.u32(cfg.headDim)],
    [`${arch}.attention.value_length`, gguf.u32(cfg.headDim)],
    [`${arch}.attention.layer_norm_rms_epsilon`, gguf.f32(cfg.rmsNormEps)],
    [`${arch}.rope.freq_base`, gguf.f32(cfg.ropeTheta)],
    [`${arch}.rope.dimension_count`, gguf.u32(cfg.headDim)],
    [`${arch}.vocab_size`, gguf.u32(cfg.vocabSize)],
  ];
}

function tensorSource(name: string, t: NamedTensor, type: GgmlTypeId): GgufTensorSource {
  return {
    name,
    ne: [...t.shape].reverse(),
    type,
    bytes: () => encodeFloats(t.data, type === GgmlType.F16 ? 'F16' : 'F32'),
  };
}

/** Writes the GGUF of a checkpoint directory to outPath (no caching; see convertCheckpointToGguf). */
export async function writeCheckpointGguf(
  checkpointDir: string,
  outPath: string,
  opts: ConvertOptions = {},
): Promise<void> {
  const cfg = await readConfig(checkpointDir);
  const dtype = opts.dtype ?? 'F32';
  ggufArchitecture(cfg);
  const expected = parameterShapes(cfg);
  const weights = await readSafetensorsDir(checkpointDir, (n) => expected.has(n));
  const missing = [...expected.keys()].filter((n) => !weights.has(n));
  if (missing.length)
    throw new Error(
      `${checkpointDir}: checkpoint lacks ${missing.length} tensor(s) its config needs: ${missing.slice(0, 5).join(', ')}`,
    );
  const metadata = new Map<string, GgufValue>([
    ...modelMetadata(cfg, path.basename(path.resolve(checkpointDir)), dtype),
    ...(await tokenizerMetadata(checkpointDir, cfg)),
  ]);
  for (const [k, v] of opts.metadata?.set ?? []) metadata.set(k, v);
  for (const k of opts.metadata?.drop ?? []) metadata.delete(k);
  const matrixType = dtype === 'F16' ? GgmlType.F16 : GgmlType.F32;
  const tensors: GgufTensorSource[] = [];
  for (const [hfName, shape] of expected) {
    const t = weights.get(hfName)!;
    if (t.shape.join() !== shape.join())
      throw new Error(`${checkpointDir}: ${hfName} has shape [${t.shape}], the config implies [${shape}]`);
    const isBias = hfName.endsWith('.bias');
    const hfModule = hfName.slice(0, hfName.lastIndexOf('.'));
    const base = ggufModuleName(hfModule);
    if (!base) throw new Error(`${checkpointDir}: no llama.cpp tensor for ${hfName}`);
    const heads = ropeHeads(cfg, hfModule);
    const data = heads ? permuteRopeRows(t.data, heads, isBias ? 1 : shape[1]!) : t.data;
    const type = shape.length === 1 ? GgmlType.F32 : matrixType;
    tensors.push(tensorSource(`${base}.${isBias ? 'bias' : 'weight'}`, { shape, data }, type));
  }
  if (cfg.ropeScaling.type !== 'none') {
    const f = ropeFreqFactors(cfg);
    tensors.push(tensorSource('rope_freqs.weight', { shape: [f.length], data: f }, GgmlType.F32));
  }
  await fs.mkdir(path.dirname(outPath), { recursive: true });
  await writeGguf(outPath, metadata, tensors);
}

// ── adapters ───────────────────────────────────────────────────────────────────────────────────────────

const PEFT_PREFIX = 'base_model.model.';

/** Reads and checks adapter_config.json: plain LoRA only (no DoRA, rsLoRA, per-module ranks or extra modules). */
async function readAdapterConfig(adapterDir: string): Promise<{ r: number; alpha: number }> {
  const file = path.join(adapterDir, ADAPTER_CONFIG);
  const c = await readOptionalJson(file);
  if (!c) throw new Error(`${file}: missing: not a PEFT adapter directory`);
  if (c.peft_type !== 'LORA' || typeof c.r !== 'number' || typeof c.lora_alpha !== 'number') {
    throw new Error(`${file}: not a LoRA adapter config (need peft_type LORA, r, lora_alpha)`);
  }
  const unsupported = [
    c.use_dora === true && 'use_dora',
    c.use_rslora === true && 'use_rslora',
    c.bias !== undefined && c.bias !== 'none' && `bias=${JSON.stringify(c.bias)}`,
    Array.isArray(c.modules_to_save) && c.modules_to_save.length > 0 && 'modules_to_save',
    c.rank_pattern && Object.keys(c.rank_pattern as Json).length > 0 && 'rank_pattern',
    c.alpha_pattern && Object.keys(c.alpha_pattern as Json).length > 0 && 'alpha_pattern',
  ].filter(Boolean);
  if (unsupported.length)
    throw new Error(`${file}: ${unsupported.join(', ')} cannot be served by llama.cpp's LoRA (plain LoRA only)`);
  return { r: c.r, alpha: c.lora_alpha };
}

/** Writes the GGUF adapter of a PEFT directory (no caching; see convertAdapterToGguf). */
export async function writeAdapterGguf(
  adapterDir: string,
  baseConfig: ModelConfig,
  outPath: string,
  opts: ConvertOptions = {},
): Promise<void> {
  const { r, alpha } = await readAdapterConfig(adapterDir);
  const arch = ggufArchitecture(baseConfig);
  const weightsFile = path.join(adapterDir, ADAPTER_WEIGHTS);
  const tensors = await readSafetensors(weightsFile);
  const shapes = parameterShapes(baseConfig);
  const type = opts.dtype === 'F16' ? GgmlType.F16 : GgmlType.F32;
  const modules = new Set<string>();
  for (const name of tensors.keys()) {
    const m = /^(.*)\.lora_[AB]\.weight$/.exec(name);
    if (!m || !m[1]!.startsWith(PEFT_PREFIX))
      throw new Error(
        `${weightsFile}: unexpected tensor "${name}" (PEFT LoRA names are ${PEFT_PREFIX}<module>.lora_A.weight / .lora_B.weight)`,
      );
    modules.add(m[1]!.slice(PEFT_PREFIX.length));
  }
  if (modules.size === 0) throw new Error(`${weightsFile}: no LoRA tensors`);
  const out: GgufTensorSource[] = [];
  for (const module of modules) {
    const a = tensors.get(`${PEFT_PREFIX}${module}.lora_A.weight`);
    const b = tensors.get(`${PEFT_PREFIX}${module}.lora_B.weight`);
    if (!a || !b) throw new Error(`${weightsFile}: ${module} needs both lora_A and lora_B`);
    const w = shapes.get(`${module}.weight`);
    const base = ggufModuleName(module);
    if (!w || !base || w.length !== 2)
      throw new Error(`${weightsFile}: ${module} is not a linear layer of this base model`);
    const [outDim, inDim] = w as [number, number];
    if (a.shape.join() !== [r, inDim].join() || b.shape.join() !== [outDim, r].join()) {
      throw new Error(
        `${weightsFile}: ${module}: lora_A [${a.shape}] / lora_B [${b.shape}] do not fit a rank-${r} update of a [${outDim}, ${inDim}] weight`,
      );
    }
    const heads = ropeHeads(baseConfig, module);
    // The adapter adds B·A to W, so B's rows take W's row permutation; A's columns are the input, untouched.
    const bData = heads ? permuteRopeRows(b.data, heads, r) : b.data;
    out.push(tensorSource(`${base}.weight.lora_a`, a, type));
    out.push(tensorSource(`${base}.weight.lora_b`, { shape: b.shape, data: bData }, type));
  }
  const metadata = new Map<string, GgufValue>([
    ['general.architecture', gguf.str(arch)],
    ['general.type', gguf.str('adapter')],
    ['general.name', gguf.str(path.basename(path.resolve(adapterDir)))],
    ['general.alignment', gguf.u32(32)],
    ['adapter.type', gguf.str('lora')],
    ['adapter.lora.alpha', gguf.f32(alpha)],
  ]);
  await fs.mkdir(path.dirname(outPath), { recursive: true });
  await writeGguf(outPath, metadata, out);
}

// ── cached conversion ──────────────────────────────────────────────────────────────────────────────────

interface Sidecar {
  converterVersion: number;
  sourceSha256: string;
  dtype: GgufDtype;
  kind: 'model' | 'adapter';
}

async function cached(outPath: string, want: Sidecar): Promise<boolean> {
  const side = (await readOptionalJson(`${outPath}.json`).catch(() => undefined)) as Sidecar | undefined;
  if (!side) return false;
  if (
    side.converterVersion !== want.converterVersion ||
    side.sourceSha256 !== want.sourceSha256 ||
    side.dtype !== want.dtype ||
    side.kind !== want.kind
  )
    return false;
  try {
    await fs.access(outPath);
    return true;
  } catch {
    return false;
  }
}

/**
 * A content-addressed place for a conversion: a new adapter (or checkpoint) version gets a new path, which
 * llama.cpp needs (it caches adapters by path for the life of the model).
 */
export function ggufCachePath(
  cacheDir: string,
  sourceSha256: string,
  kind: 'model' | 'adapter',
  dtype: GgufDtype = 'F32',
): string {
  return path.join(
    cacheDir,
    `${kind}-${sourceSha256.slice(0, 32)}-${dtype.toLowerCase()}-v${GGUF_CONVERTER_VERSION}.gguf`,
  );
}

/** Where a conversion goes: an exact file, or a content-addressed file in a cache directory (ggufCachePath). */
export type GgufOut = string | { cacheDir: string };

function outPathFor(out: GgufOut, sourceSha256: string, kind: 'model' | 'adapter', dtype: GgufDtype): string {
  return typeof out === 'string' ? out : ggufCachePath(out.cacheDir, sourceSha256, kind, dtype);
}

/**
 * Converts a checkpoint directory to GGUF unless the output already holds this checkpoint's conversion (same
 * sha256, converter version and dtype). The result is validated before it is reported.
 */
export async function convertCheckpointToGguf(
  checkpointDir: string,
  out: GgufOut,
  opts: ConvertOptions = {},
): Promise<ConvertResult> {
  const sourceSha256 = await checkpointSha256(checkpointDir);
  const side: Sidecar = {
    converterVersion: GGUF_CONVERTER_VERSION,
    sourceSha256,
    dtype: opts.dtype ?? 'F32',
    kind: 'model',
  };
  const outPath = outPathFor(out, sourceSha256, 'model', side.dtype);
  if (await cached(outPath, side)) return { path: outPath, sourceSha256, converted: false };
  await writeCheckpointGguf(checkpointDir, outPath, opts);
  await validateModelGguf(outPath, await readConfig(checkpointDir));
  await writeFileAtomic(`${outPath}.json`, JSON.stringify(side, null, 2) + '\n');
  return { path: outPath, sourceSha256, converted: true };
}

/**
 * As convertCheckpointToGguf, for a PEFT adapter directory of a model with baseConfig. Give a cache directory
 * (or a new path per version): llama.cpp caches an adapter by its path until the model is disposed.
 */
export async function convertAdapterToGguf(
  adapterDir: string,
  baseConfig: ModelConfig,
  out: GgufOut,
  opts: ConvertOptions = {},
): Promise<ConvertResult> {
  const sourceSha256 = await checkpointSha256(adapterDir);
  const side: Sidecar = {
    converterVersion: GGUF_CONVERTER_VERSION,
    sourceSha256,
    dtype: opts.dtype ?? 'F32',
    kind: 'adapter',
  };
  const outPath = outPathFor(out, sourceSha256, 'adapter', side.dtype);
  if (await cached(outPath, side)) return { path: outPath, sourceSha256, converted: false };
  await writeAdapterGguf(adapterDir, baseConfig, outPath, opts);
  await validateAdapterGguf(outPath, baseConfig);
  await writeFileAtomic(`${outPath}.json`, JSON.stringify(side, null, 2) + '\n');
  return { path: outPath, sourceSha256, converted: true };
}
