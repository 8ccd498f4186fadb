// Model configuration, read from a Hugging Face `config.json`.
//
// One decoder covers the Llama family: Llama 2/3/3.1/3.2, SmolLM/SmolLM2 (model_type "llama") and Qwen2/2.5
// (model_type "qwen2": the same block with a bias on the q/k/v projections). Anything else is refused with a
// clear error rather than loaded into the wrong equations.
//
// Honoured keys (everything else in config.json is ignored):
//   model_type, architectures         must name a supported family (see SUPPORTED_MODEL_TYPES)
//   vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads
//   num_key_value_heads               grouped-query attention (default: num_attention_heads)
//   head_dim                          default: hidden_size / num_attention_heads
//   rms_norm_eps                      default 1e-6
//   rope_theta                        default 10000
//   rope_scaling                      null, {rope_type|type: "default"}, "linear" {factor}, or "llama3"
//                                     {factor, low_freq_factor, high_freq_factor, original_max_position_embeddings}
//   tie_word_embeddings               default false (as LlamaConfig and Qwen2Config)
//   max_position_embeddings           default 2048
//   attention_bias                    q/k/v/o biases (llama); qwen2 always has q/k/v bias and no o bias
//   mlp_bias                          biases on gate/up/down (llama; rarely true)
//   bos_token_id, eos_token_id        number, number[] or null; pad_token_id likewise
//   hidden_act                        must be "silu" (SwiGLU); anything else is refused
//   use_sliding_window                must not be true (qwen2; full causal attention only)

export const SUPPORTED_MODEL_TYPES = ['llama', 'qwen2'] as const;
export type ModelType = (typeof SUPPORTED_MODEL_TYPES)[number];
const SUPPORTED_ARCHITECTURES = ['LlamaForCausalLM', 'Qwen2ForCausalLM'];

export type RopeScaling =
  | { type: 'none' }
  | { type: 'linear'; factor: number }
  | {
      type: 'llama3';
      factor: number;
      lowFreqFactor: number;
      highFreqFactor: number;
      originalMaxPositionEmbeddings: number;
    };

export interface ModelConfig {
  modelType: ModelType;
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: RopeScaling;
  tieWordEmbeddings: boolean;
  maxPositionEmbeddings: number;
  /** Bias on q_proj, k_proj, v_proj. */
  qkvBias: boolean;
  /** Bias on o_proj. */
  outputBias: boolean;
  /** Bias on gate_proj, up_proj, down_proj. */
  mlpBias: boolean;
  bosTokenId: number | null;
  eosTokenIds: number[];
  padTokenId: number | null;
}

export class ConfigError extends Error {
  constructor(
    message: string,
    readonly source?: string,
  ) {
    super(source ? `${source}: ${message}` : message);
    this.name = 'ModelConfigError';
  }
}

type Json = Record<string, unknown>;

function positiveInt(raw: Json, key: string, source?: string, fallback?: number): number {
  const v = raw[key] ?? fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
    throw new ConfigError(`"${key}" must be a positive integer (got ${JSON.stringify(raw[key])})`, source);
  }
  return v;
}

function positiveNumber(raw: Json, key: string, fallback: number, source?: string): number {
  const v = raw[key] ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw new ConfigError(`"${key}" must be a positive number (got ${JSON.stringify(raw[key])})`, source);
  }
  return v;
}

function tokenIds(v: unknown, key: string, source?: string): number[] {
  if (v === undefined || v === null) return [];
  const list = Array.isArray(v) ? v : [v];
  for (const id of list) {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) {
      throw new ConfigError(`"${key}" must be a token id or a list of them (got ${JSON.stringify(v)})`, source);
    }
  }
  return list as number[];
}

function parseRopeScaling(v: unknown, source?: string): RopeScaling {
  if (v === undefined || v === null) return { type: 'none' };
  if (typeof v !== 'object') throw new ConfigError(`"rope_scaling" must be an object or null`, source);
  const r = v as Json;
  const kind = (r.rope_type ?? r.type ?? 'default') as string;
  if (kind === 'default') return { type: 'none' };
  if (kind === 'linear') return { type: 'linear', factor: positiveNumber(r, 'factor', NaN, source) };
  if (kind === 'llama3') {
    return {
      type: 'llama3',
      factor: positiveNumber(r, 'factor', NaN, source),
      lowFreqFactor: positiveNumber(r, 'low_freq_factor', NaN, source),
      highFreqFactor: positiveNumber(r, 'high_freq_factor', NaN, source),
      originalMaxPositionEmbeddings: positiveInt(r, 'original_max_position_embeddings', source),
    };
  }
  throw new ConfigError(`rope_scaling type "${kind}" is not supported (supported: default, linear, llama3)`, source);
}

/**
 * Parses a Hugging Face config.json object. `source` (a file path) is only used in error messages.
 * Throws ConfigError for unknown architectures, unsupported features or missing/ill-typed keys.
 */
export function parseHfConfig(raw: unknown, source?: string): ModelConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ConfigError('config.json must hold a JSON object', source);
  const c = raw as Json;
  const modelType = c.model_type;
  if (typeof modelType !== 'string' || !(SUPPORTED_MODEL_TYPES as readonly string[]).includes(modelType)) {
    throw new ConfigError(
      `unsupported model_type ${JSON.stringify(modelType)}: this decoder implements ${SUPPORTED_MODEL_TYPES.join(', ')} ` +
        `(Llama, SmolLM and Qwen2-style models)`,
      source,
    );
  }
  if (c.architectures !== undefined) {
    const archs = c.architectures;
    if (!Array.isArray(archs) || !archs.every((a) => typeof a === 'string' && SUPPORTED_ARCHITECTURES.includes(a))) {
      throw new ConfigError(
        `unsupported architectures ${JSON.stringify(archs)}: supported are ${SUPPORTED_ARCHITECTURES.join(', ')}`,
        source,
      );
    }
  }
  if (c.use_sliding_window === true)
    throw new ConfigError('use_sliding_window is not supported (full causal attention only)', source);
  const act = c.hidden_act ?? 'silu';
  if (act !== 'silu')
    throw new ConfigError(`hidden_act ${JSON.stringify(act)} is not supported (only "silu", i.e. SwiGLU)`, source);
  const hiddenSize = positiveInt(c, 'hidden_size', source);
  const numHeads = positiveInt(c, 'num_attention_heads', source);
  const numKvHeads = positiveInt(c, 'num_key_value_heads', source, numHeads);
  if (numHeads % numKvHeads !== 0) {
    throw new ConfigError(
      `num_attention_heads (${numHeads}) must be a multiple of num_key_value_heads (${numKvHeads})`,
      source,
    );
  }
  if (c.head_dim === undefined && hiddenSize % numHeads !== 0) {
    throw new ConfigError(
      `hidden_size (${hiddenSize}) is not divisible by num_attention_heads (${numHeads}) and no head_dim is given`,
      source,
    );
  }
  const headDim = positiveInt(c, 'head_dim', source, hiddenSize / numHeads);
  if (headDim % 2 !== 0) throw new ConfigError(`head_dim (${headDim}) must be even for rotary positions`, source);
  const attentionBias = c.attention_bias === true;
  const eos = tokenIds(c.eos_token_id, 'eos_token_id', source);
  const bos = tokenIds(c.bos_token_id, 'bos_token_id', source);
  const pad = tokenIds(c.pad_token_id, 'pad_token_id', source);
  return {
    modelType: modelType as ModelType,
    vocabSize: positiveInt(c, 'vocab_size', source),
    hiddenSize,
    intermediateSize: positiveInt(c, 'intermediate_size', source),
    numLayers: positiveInt(c, 'num_hidden_layers', source),
    numHeads,
    numKvHeads,
    headDim,
    rmsNormEps: positiveNumber(c, 'rms_norm_eps', 1e-6, source),
    ropeTheta: positiveNumber(c, 'rope_theta', 10000, source),
    ropeScaling: parseRopeScaling(c.rope_scaling, source),
    // LlamaConfig and Qwen2Config both default tie_word_embeddings to false.
    tieWordEmbeddings: c.tie_word_embeddings === true,
    maxPositionEmbeddings: positiveInt(c, 'max_position_embeddings', source, 2048),
    qkvBias: modelType === 'qwen2' ? true : attentionBias,
    outputBias: modelType === 'qwen2' ? false : attentionBias,
    mlpBias: c.mlp_bias === true,
    bosTokenId: bos[0] ?? null,
    eosTokenIds: eos,
    padTokenId: pad[0] ?? null,
  };
}

/** The config.json a model directory gets when we save it (round-trips through parseHfConfig). */
export function toHfConfig(cfg: ModelConfig): Record<string, unknown> {
  const rope =
    cfg.ropeScaling.type === 'none'
      ? null
      : cfg.ropeScaling.type === 'linear'
        ? { rope_type: 'linear', factor: cfg.ropeScaling.factor }
        : {
            rope_type: 'llama3',
            factor: cfg.ropeScaling.factor,
            low_freq_factor: cfg.ropeScaling.lowFreqFactor,
            high_freq_factor: cfg.ropeScaling.highFreqFactor,
            original_max_position_embeddings: cfg.ropeScaling.originalMaxPositionEmbeddings,
          };
  const out: Record<string, unknown> = {
    architectures: [cfg.modelType === 'qwen2' ? 'Qwen2ForCausalLM' : 'LlamaForCausalLM'],
    model_type: cfg.modelType,
    vocab_size: cfg.vocabSize,
    hidden_size: cfg.hiddenSize,
    intermediate_size: cfg.intermediateSize,
    num_hidden_layers: cfg.numLayers,
    num_attention_heads: cfg.numHeads,
    num_key_value_heads: cfg.numKvHeads,
    head_dim: cfg.headDim,
    hidden_act: 'silu',
    rms_norm_eps: cfg.rmsNormEps,
    rope_theta: cfg.ropeTheta,
    rope_scaling: rope,
    tie_word_embeddings: cfg.tieWordEmbeddings,
    max_position_embeddings: cfg.maxPositionEmbeddings,
    mlp_bias: cfg.mlpBias,
    bos_token_id: cfg.bosTokenId,
    eos_token_id: cfg.eosTokenIds.length === 1 ? cfg.eosTokenIds[0] : cfg.eosTokenIds,
    pad_token_id: cfg.padTokenId,
    torch_dtype: 'float32',
  };
  if (cfg.modelType === 'llama') out.attention_bias = cfg.qkvBias;
  return out;
}

/** A config for tests, benchmarks and the starter policy: Llama layout, every field explicit. */
export function llamaConfig(p: {
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads?: number;
  maxPositionEmbeddings?: number;
  tieWordEmbeddings?: boolean;
  ropeTheta?: number;
  ropeScaling?: RopeScaling;
  qkvBias?: boolean;
  bosTokenId?: number | null;
  eosTokenIds?: number[];
  padTokenId?: number | null;
}): ModelConfig {
  return {
    modelType: 'llama',
    vocabSize: p.vocabSize,
    hiddenSize: p.hiddenSize,
    intermediateSize: p.intermediateSize,
    numLayers: p.numLayers,
    numHeads: p.numHeads,
    numKvHeads: p.numKvHeads ?? p.numHeads,
    headDim: p.hiddenSize / p.numHeads,
    rmsNormEps: 1e-5,
    ropeTheta: p.ropeTheta ?? 10000,
    ropeScaling: p.ropeScaling ?? { type: 'none' },
    tieWordEmbeddings: p.tieWordEmbeddings ?? true,
    maxPositionEmbeddings: p.maxPositionEmbeddings ?? 2048,
    qkvBias: p.qkvBias ?? false,
    outputBias: false,
    mlpBias: false,
    bosTokenId: p.bosTokenId ?? null,
    eosTokenIds: p.eosTokenIds ?? [],
    padTokenId: p.padTokenId ?? null,
  };
}

/** Number of parameters (base model, no adapters). */
export function parameterCount(cfg: ModelConfig): number {
  const d = cfg.hiddenSize;
  const q = cfg.numHeads * cfg.headDim;
  const kv = cfg.numKvHeads * cfg.headDim;
  const attn = d * q + 2 * d * kv + q * d + (cfg.qkvBias ? q + 2 * kv : 0) + (cfg.outputBias ? d : 0);
  const mlp = 3 * d * cfg.intermediateSize + (cfg.mlpBias ? 2 * cfg.intermediateSize + d : 0);
  const layer = attn + mlp + 2 * d;
  return cfg.vocabSize * d * (cfg.tieWordEmbeddings ? 1 : 2) + cfg.numLayers * layer + d;
}
