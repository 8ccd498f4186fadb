// trainer/serve/: serving a policy (engine contract, llama.cpp engine, GGUF files, OpenAI-compatible server).
// Files here may import tasks/, prisma/ and trainer/ only.
//
// Checks a GGUF file before llama.cpp sees it. llama.cpp answers some defects with a JavaScript error ("key not
// found") but others with a C assert that kills the whole process (a missing feed_forward_length or
// head_count, a llama tokenizer without scores), so everything llama.cpp requires of a Llama/Qwen2 model or
// LoRA adapter is checked here first: the header parses and fits the file (gguf.ts), the required keys exist
// with the exact types llama.cpp reads (UINT32 integers, FLOAT32 epsilon), every tensor has the shape the
// hyperparameters imply, norms are F32, and the vocabulary matches the embedding. Every problem found is
// listed in one GgufValidationError.
import type { ModelConfig } from '../model/architecture.ts';
import {
  GgmlType,
  ggmlTypeName,
  GgufType,
  ggufTypeName,
  readGgufHeader,
  type GgufHeader,
  type GgufTensorInfo,
  type GgufValue,
} from './gguf.ts';

export class GgufValidationError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`${file}: refused, llama.cpp cannot safely load it: ${problems.join('; ')}`);
    this.name = 'GgufValidationError';
  }
}

export interface ModelGgufSummary {
  header: GgufHeader;
  architecture: 'llama' | 'qwen2';
  vocabSize: number;
  contextLength: number;
  embeddingLength: number;
  blockCount: number;
}

const ARCHITECTURES = ['llama', 'qwen2'] as const;

class Checker {
  readonly problems: string[] = [];
  constructor(readonly h: GgufHeader) {}
  fail(p: string): void {
    this.problems.push(p);
  }
  entry(key: string, type: number, required: boolean): GgufValue | undefined {
    const v = this.h.metadata.get(key);
    if (!v) {
      if (required) this.fail(`required key ${key} is missing`);
      return undefined;
    }
    if (v.type !== type) {
      this.fail(`${key} is ${ggufTypeName(v.type)}, llama.cpp needs ${ggufTypeName(type)}`);
      return undefined;
    }
    return v;
  }
  u32(key: string, required = true): number | undefined {
    const v = this.entry(key, GgufType.UINT32, required);
    if (v === undefined) return undefined;
    const n = Number(v.value);
    if (required && n === 0) this.fail(`${key} is 0`);
    return n;
  }
  f32(key: string, required = true): number | undefined {
    const v = this.entry(key, GgufType.FLOAT32, required);
    if (v === undefined) return undefined;
    const n = Number(v.value);
    if (!Number.isFinite(n)) this.fail(`${key} is not finite`);
    return n;
  }
  str(key: string, required = true): string | undefined {
    const v = this.entry(key, GgufType.STRING, required);
    return v === undefined ? undefined : String(v.value);
  }
  array(key: string, itemType: number, required = true): unknown[] | undefined {
    const v = this.entry(key, GgufType.ARRAY, required);
    if (v === undefined || v.type !== GgufType.ARRAY) return undefined;
    if (v.itemType !== itemType) {
      this.fail(`${key} is an array of ${ggufTypeName(v.itemType)}, llama.cpp needs ${ggufTypeName(itemType)}`);
      return undefined;
    }
    return v.value;
  }
  tensor(
    tensors: Map<string, GgufTensorInfo>,
    name: string,
    ne: number[],
    opts: { required?: boolean; f32?: boolean } = {},
  ): GgufTensorInfo | undefined {
    const t = tensors.get(name);
    if (!t) {
      if (opts.required ?? true) this.fail(`tensor ${name} is missing`);
      return undefined;
    }
    tensors.delete(name);
    if (t.ne.join() !== ne.join())
      this.fail(`tensor ${name} has ne [${t.ne.join(', ')}], the hyperparameters imply [${ne.join(', ')}]`);
    if (opts.f32 && t.type !== GgmlType.F32)
      this.fail(`tensor ${name} is ${ggmlTypeName(t.type)}; norms, biases and rope factors must be F32`);
    return t;
  }
}

function architectureOf(c: Checker): 'llama' | 'qwen2' | undefined {
  const arch = c.str('general.architecture');
  if (arch === undefined) return undefined;
  if (!(ARCHITECTURES as readonly string[]).includes(arch)) {
    c.fail(`general.architecture "${arch}" is not one this project serves (${ARCHITECTURES.join(', ')})`);
    return undefined;
  }
  return arch as 'llama' | 'qwen2';
}

function checkTokenizer(c: Checker, vocab: number | undefined): void {
  const model = c.str('tokenizer.ggml.model');
  const tokens = c.array('tokenizer.ggml.tokens', GgufType.STRING);
  if (tokens && vocab !== undefined && tokens.length !== vocab) {
    c.fail(`tokenizer.ggml.tokens has ${tokens.length} entries but token_embd.weight has ${vocab} rows`);
  }
  const types = c.array('tokenizer.ggml.token_type', GgufType.INT32, model === 'llama');
  if (types && tokens && types.length !== tokens.length)
    c.fail(`tokenizer.ggml.token_type has ${types.length} entries for ${tokens.length} tokens`);
  if (model === 'gpt2') {
    c.array('tokenizer.ggml.merges', GgufType.STRING);
    c.str('tokenizer.ggml.pre');
  } else if (model === 'llama') {
    // llama.cpp throws from C++ (not catchable here) on a SentencePiece vocabulary without scores or byte tokens.
    const scores = c.array('tokenizer.ggml.scores', GgufType.FLOAT32);
    if (scores && tokens && scores.length !== tokens.length)
      c.fail(`tokenizer.ggml.scores has ${scores.length} entries for ${tokens.length} tokens`);
    if (tokens) {
      const set = new Set(tokens as string[]);
      for (let b = 0; b < 256; b++) {
        const t = `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`;
        if (!set.has(t)) {
          c.fail(`a "llama" tokenizer needs all 256 byte tokens; ${t} is missing`);
          break;
        }
      }
    }
  } else if (model !== undefined) {
    c.fail(`tokenizer.ggml.model "${model}" is not supported (gpt2 or llama)`);
  }
  for (const key of ['tokenizer.ggml.eos_token_id', 'tokenizer.ggml.bos_token_id', 'tokenizer.ggml.padding_token_id']) {
    const id = c.u32(key, false);
    if (id !== undefined && vocab !== undefined && id >= vocab)
      c.fail(`${key} ${id} is outside the vocabulary (${vocab})`);
  }
}

/**
 * Validates a model GGUF (not an adapter). With `expect`, the hyperparameters must also equal the config the
 * file was converted from. Throws GgufValidationError listing every problem.
 */
export async function validateModelGguf(file: string, expect?: ModelConfig): Promise<ModelGgufSummary> {
  const h = await readGgufHeader(file);
  const c = new Checker(h);
  const arch = architectureOf(c);
  const type = c.str('general.type', false);
  if (type !== undefined && type !== 'model') c.fail(`general.type is "${type}", not a model`);
  if (!arch) throw new GgufValidationError(file, c.problems);
  const ctx = c.u32(`${arch}.context_length`);
  const d = c.u32(`${arch}.embedding_length`);
  const layers = c.u32(`${arch}.block_count`);
  const ff = c.u32(`${arch}.feed_forward_length`);
  const heads = c.u32(`${arch}.attention.head_count`);
  const kvHeads = c.u32(`${arch}.attention.head_count_kv`, false) ?? heads;
  const eps = c.f32(`${arch}.attention.layer_norm_rms_epsilon`);
  c.f32(`${arch}.rope.freq_base`, false);
  const keyLen = c.u32(`${arch}.attention.key_length`, false);
  const valueLen = c.u32(`${arch}.attention.value_length`, false);
  const ropeDims = c.u32(`${arch}.rope.dimension_count`, false);
  const tensors = new Map(h.tensors.map((t) => [t.name, t]));
  const embd = tensors.get('token_embd.weight');
  const vocab = embd?.ne[1];
  if (d === undefined || layers === undefined || ff === undefined || heads === undefined || kvHeads === undefined) {
    if (!embd) c.fail('tensor token_embd.weight is missing');
    throw new GgufValidationError(file, c.problems);
  }
  if (heads % kvHeads !== 0) c.fail(`head_count ${heads} is not a multiple of head_count_kv ${kvHeads}`);
  if (keyLen === undefined && d % heads !== 0) c.fail(`embedding_length ${d} is not divisible by head_count ${heads}`);
  const dh = keyLen ?? d / heads;
  if (valueLen !== undefined && valueLen !== dh)
    c.fail(`value_length ${valueLen} differs from key_length ${dh} (not supported here)`);
  if (ropeDims !== undefined && (ropeDims > dh || ropeDims % 2 !== 0))
    c.fail(`rope.dimension_count ${ropeDims} does not fit head size ${dh}`);
  if (embd === undefined || vocab === undefined) c.fail('tensor token_embd.weight is missing');
  else c.tensor(tensors, 'token_embd.weight', [d, vocab]);
  const q = heads * dh;
  const kv = kvHeads * dh;
  for (let l = 0; l < layers; l++) {
    const p = `blk.${l}.`;
    c.tensor(tensors, p + 'attn_norm.weight', [d], { f32: true });
    c.tensor(tensors, p + 'attn_q.weight', [d, q]);
    c.tensor(tensors, p + 'attn_k.weight', [d, kv]);
    c.tensor(tensors, p + 'attn_v.weight', [d, kv]);
    c.tensor(tensors, p + 'attn_output.weight', [q, d]);
    const biasRequired = arch === 'qwen2';
    c.tensor(tensors, p + 'attn_q.bias', [q], { required: biasRequired, f32: true });
    c.tensor(tensors, p + 'attn_k.bias', [kv], { required: biasRequired, f32: true });
    c.tensor(tensors, p + 'attn_v.bias', [kv], { required: biasRequired, f32: true });
    c.tensor(tensors, p + 'attn_output.bias', [d], { required: false, f32: true });
    c.tensor(tensors, p + 'ffn_norm.weight', [d], { f32: true });
    c.tensor(tensors, p + 'ffn_gate.weight', [d, ff]);
    c.tensor(tensors, p + 'ffn_up.weight', [d, ff]);
    c.tensor(tensors, p + 'ffn_down.weight', [ff, d]);
  }
  c.tensor(tensors, 'output_norm.weight', [d], { f32: true });
  if (vocab !== undefined) c.tensor(tensors, 'output.weight', [d, vocab], { required: false });
  if (arch === 'llama') c.tensor(tensors, 'rope_freqs.weight', [(ropeDims ?? dh) / 2], { required: false, f32: true });
  for (const name of tensors.keys()) c.fail(`unexpected tensor ${name}`);
  checkTokenizer(c, vocab);
  if (expect) {
    const pairs: [string, number | undefined, number][] = [
      ['context_length', ctx, expect.maxPositionEmbeddings],
      ['embedding_length', d, expect.hiddenSize],
      ['block_count', layers, expect.numLayers],
      ['feed_forward_length', ff, expect.intermediateSize],
      ['attention.head_count', heads, expect.numHeads],
      ['attention.head_count_kv', kvHeads, expect.numKvHeads],
      ['vocabulary', vocab, expect.vocabSize],
    ];
    for (const [k, got, want] of pairs)
      if (got !== undefined && got !== want) c.fail(`${k} is ${got}, the checkpoint's config says ${want}`);
    if (eps !== undefined && Math.abs(eps - expect.rmsNormEps) > 1e-6 * Math.max(1, expect.rmsNormEps))
      c.fail(`rms epsilon ${eps} differs from the config's ${expect.rmsNormEps}`);
  }
  if (c.problems.length) throw new GgufValidationError(file, c.problems);
  return {
    header: h,
    architecture: arch,
    vocabSize: vocab!,
    contextLength: ctx!,
    embeddingLength: d,
    blockCount: layers,
  };
}

/** Shapes (ggml ne) of the base weights an adapter may target, from the base model's config. */
function baseMatrixShapes(cfg: ModelConfig): Map<string, [number, number]> {
  const q = cfg.numHeads * cfg.headDim;
  const kv = cfg.numKvHeads * cfg.headDim;
  const d = cfg.hiddenSize;
  const f = cfg.intermediateSize;
  const m = new Map<string, [number, number]>();
  for (let l = 0; l < cfg.numLayers; l++) {
    const p = `blk.${l}.`;
    m.set(p + 'attn_q.weight', [d, q]);
    m.set(p + 'attn_k.weight', [d, kv]);
    m.set(p + 'attn_v.weight', [d, kv]);
    m.set(p + 'attn_output.weight', [q, d]);
    m.set(p + 'ffn_gate.weight', [d, f]);
    m.set(p + 'ffn_up.weight', [d, f]);
    m.set(p + 'ffn_down.weight', [f, d]);
  }
  return m;
}

/**
 * Validates a LoRA adapter GGUF against the base model it will be attached to: llama.cpp aborts on an
 * adapter whose shapes do not match its model, so every pair is checked here.
 */
export async function validateAdapterGguf(
  file: string,
  base: ModelConfig,
): Promise<{ header: GgufHeader; rank: number; alpha: number }> {
  const h = await readGgufHeader(file);
  const c = new Checker(h);
  const arch = architectureOf(c);
  const baseArch = base.modelType === 'qwen2' ? 'qwen2' : 'llama';
  if (arch && arch !== baseArch) c.fail(`adapter is for ${arch}, the base model is ${baseArch}`);
  const type = c.str('general.type');
  if (type !== undefined && type !== 'adapter') c.fail(`general.type is "${type}", not "adapter"`);
  const adapterType = c.str('adapter.type');
  if (adapterType !== undefined && adapterType !== 'lora') c.fail(`adapter.type is "${adapterType}", not "lora"`);
  const alpha = c.f32('adapter.lora.alpha') ?? 0;
  const shapes = baseMatrixShapes(base);
  const tensors = new Map(h.tensors.map((t) => [t.name, t]));
  let rank: number | undefined;
  const seen = new Set<string>();
  for (const t of h.tensors) {
    const m = /^(.*)\.lora_([ab])$/.exec(t.name);
    if (!m) {
      c.fail(`unexpected tensor ${t.name} (adapter tensors are <base>.lora_a / .lora_b)`);
      continue;
    }
    const baseName = m[1]!;
    if (seen.has(baseName)) continue;
    seen.add(baseName);
    const w = shapes.get(baseName);
    const a = tensors.get(`${baseName}.lora_a`);
    const b = tensors.get(`${baseName}.lora_b`);
    if (!w) {
      c.fail(`${baseName} is not a linear weight of the base model`);
      continue;
    }
    if (!a || !b) {
      c.fail(`${baseName} needs both lora_a and lora_b`);
      continue;
    }
    for (const x of [a, b])
      if (x.type !== GgmlType.F32 && x.type !== GgmlType.F16) c.fail(`${x.name} is ${ggmlTypeName(x.type)}`);
    const r = a.ne[1];
    if (a.ne.length !== 2 || b.ne.length !== 2 || a.ne[0] !== w[0] || b.ne[1] !== w[1] || b.ne[0] !== r) {
      c.fail(`${baseName}: lora_a ne [${a.ne}] and lora_b ne [${b.ne}] do not fit a weight of ne [${w}]`);
      continue;
    }
    if (rank === undefined) rank = r;
  }
  if (seen.size === 0) c.fail('the adapter has no LoRA tensors');
  if (c.problems.length) throw new GgufValidationError(file, c.problems);
  return { header: h, rank: rank!, alpha };
}
