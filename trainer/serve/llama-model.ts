// trainer/serve/: serving a policy (engine contract, llama.cpp engine, GGUF files, OpenAI-compatible server).
// Files here may import tasks/, prisma/ and trainer/ only (and their npm dependencies).
//
// The settings of a llama.cpp engine (llama-engine.ts), and the model and adapters it serves, loaded: our own
// checkpoint converted to GGUF (cached) and validated, its prompts our chat template and tokenizer; or a foreign
// GGUF with the file's own vocabulary and chat template (gguf-foreign.ts), checked against the sha256 a version
// registered. Either is probed in a child process first (llama-load.ts), and so is each adapter with its model.
//
// Prompts of our own checkpoints are the checkpoint's chat template rendered by trainer/model/chat.ts and encoded
// by trainer/model/tokenizer.ts, exactly as the tfjs path does; completion text is decoded by the same tokenizer.
// A foreign GGUF brings its own vocabulary and chat template: gguf-foreign.ts's codec renders the file's template
// and lets llama.cpp tokenize with the file's vocabulary.
import { tmpdir } from 'node:os';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { LlamaModel } from 'node-llama-cpp';
import type { Logger } from '../../tasks/logger.ts';
import type { ModelConfig } from '../model/architecture.ts';
import { ChatFormatter } from '../model/chat.ts';
import { readConfig } from '../model/checkpoint.ts';
import { TextTokenizer } from '../model/tokenizer.ts';
import { convertAdapterToGguf, convertCheckpointToGguf, type GgufDtype } from './gguf-convert.ts';
import { ggufPromptCodec, inspectForeignGguf, type ForeignGgufInfo, type PromptCodec } from './gguf-foreign.ts';
import { validateAdapterGguf, validateModelGguf } from './gguf-validate.ts';
import type { EngineStartOptions } from './engine-contract.ts';
import { loadLlama, probeGgufInChild } from './llama-load.ts';

/** The llama.cpp engine's settings beyond the contract's (engine-contract.ts). */
export interface LlamaEngineOptions extends EngineStartOptions {
  /** Where converted GGUF files are kept (content-addressed). Default: <os tmpdir>/sweetloop-gguf. */
  cacheDir?: string;
  /** Tokens each sequence can hold (prompt + completion). Default: min(max_position_embeddings, 4096). */
  contextSize?: number;
  /** Contexts alive at once (the base model and each adapter in use take one set of `shards`). Default 2. */
  maxContexts?: number;
  /** Storage of the converted matrices. F16 was ~5% faster (bench/HISTORY.md, "Serving"); F32 is exact. Default F32. */
  dtype?: GgufDtype;
  /** Threads per context (default 1: two were slower on the 2-vCPU machines measured). */
  threads?: number;
  /**
   * Most tokens one llama_decode takes (prompts are cut to fit). Default 2048: on the starter, 32 prompts cost
   * half the CPU time at 2048 than at node-llama-cpp's default of 512 (llama-schedule.ts).
   */
  batchSize?: number;
  /**
   * Sequences each context keeps beyond `maxBatch` so that finished dialogues' KV caches survive for their next
   * turn (prefix reuse, llama-schedule.ts); at most `maxBatch` of a context's sequences decode at once. Each
   * costs `contextSize` KV cells. Default `maxBatch`; 0 still reuses prefixes, among fewer sequences.
   */
  cachedSequences?: number;
  /**
   * Contexts per model (the base model and each adapter), among which sequences are divided: each decodes on
   * its own thread, so two use two cores where one context with two threads was slower. Default: one
   * per core, at most one per 8 of `maxBatch` (at least 1).
   */
  shards?: number;
  /**
   * llama.cpp's flash attention. Default off: on the starter with 32 sequences of 500 tokens, it took about twice
   * the CPU time (prompts and decoding alike) of the plain attention on these machines.
   */
  flashAttention?: boolean;
  /** Load each new GGUF file in a child process first (default true). */
  probe?: boolean;
  /** Told each request's prompt token ids as they go to llama.cpp (tests check what the model was given). */
  onPrompt?: (ids: readonly number[]) => void;
  log?: Logger;
}

/** A model loaded in this process, with what the engine needs to serve it. */
export interface LoadedLlamaModel {
  /** Our checkpoint's config; null for a foreign GGUF (no adapters then: nothing to convert them against). */
  config: ModelConfig | null;
  codec: PromptCodec;
  /** Rows of the embedding (the logits' length). */
  embeddingRows: number;
  model: LlamaModel;
  ggufPath: string;
  contextSize: number;
}

/** Converts (cached) and validates the checkpoint's GGUF, probes it in a child process, loads it. */
export async function loadCheckpointModel(
  options: LlamaEngineOptions & { cacheDir: string },
): Promise<LoadedLlamaModel> {
  const config = await readConfig(options.checkpointDir);
  const tokenizer = await TextTokenizer.load(options.checkpointDir);
  const chat = ChatFormatter.fromTokenizer(tokenizer);
  const conv = await convertCheckpointToGguf(
    options.checkpointDir,
    { cacheDir: options.cacheDir },
    { dtype: options.dtype ?? 'F32' },
  );
  await validateModelGguf(conv.path, config);
  if (options.probe ?? true) await probeGgufInChild(conv.path);
  const llama = await loadLlama();
  const model = await llama.loadModel({ modelPath: conv.path, gpuLayers: 0 });
  const contextSize = Math.min(options.contextSize ?? 4096, config.maxPositionEmbeddings);
  options.log?.info(
    { gguf: conv.path, converted: conv.converted, maxBatch: options.maxBatch, contextSize },
    'llama.cpp engine loaded',
  );
  const codec: PromptCodec = {
    encode: (messages) => tokenizer.encode(chat.format(messages, { addGenerationPrompt: true })),
    decode: (ids) => tokenizer.decode([...ids]),
    isEnd: (id) => tokenizer.eosTokenIds.includes(id),
    vocabSize: tokenizer.vocabSize,
  };
  return { config, codec, embeddingRows: config.vocabSize, model, ggufPath: conv.path, contextSize };
}

/** Where converted GGUF files are kept when the options do not say. */
export function defaultGgufCacheDir(): string {
  return path.join(tmpdir(), 'sweetloop-gguf');
}

/**
 * A foreign GGUF model: validated, checked against `expectSha256` when given (the file a version registered),
 * probed in a child process, loaded. Also returns the file's summary (provenance).
 */
export async function loadForeignModel(
  options: Omit<LlamaEngineOptions, 'checkpointDir'> & { ggufPath: string; expectSha256?: string },
): Promise<LoadedLlamaModel & { info: ForeignGgufInfo }> {
  const info = await inspectForeignGguf(options.ggufPath);
  if (options.expectSha256 && info.sha256 !== options.expectSha256) {
    throw new Error(
      `${options.ggufPath} changed since it was registered (sha256 ${info.sha256.slice(0, 12)}..., registered ${options.expectSha256.slice(0, 12)}...): register the new file as a new version`,
    );
  }
  if (options.probe ?? true) await probeGgufInChild(options.ggufPath);
  const llama = await loadLlama();
  const model = await llama.loadModel({ modelPath: options.ggufPath, gpuLayers: 0 });
  const template = model.fileInfo.metadata.tokenizer?.chat_template;
  const contextSize = Math.min(options.contextSize ?? 4096, info.contextLength);
  options.log?.info(
    { gguf: options.ggufPath, quantization: info.quantization, maxBatch: options.maxBatch, contextSize },
    'llama.cpp engine loaded (foreign GGUF)',
  );
  return {
    config: null,
    codec: ggufPromptCodec(model, String(template), info.vocabSize),
    embeddingRows: info.vocabSize,
    model,
    ggufPath: options.ggufPath,
    contextSize,
    info,
  };
}

/**
 * The GGUF of an adapter: a PEFT directory converted (cached by sha256) or a GGUF file as given; validated
 * against the model's config and probed with the model's GGUF in a child process.
 */
export async function loadAdapterGguf(
  source: string,
  config: ModelConfig,
  modelGguf: string,
  options: Pick<LlamaEngineOptions, 'cacheDir' | 'dtype' | 'probe'>,
): Promise<string> {
  let ggufPath: string;
  if ((await stat(source)).isDirectory()) {
    ggufPath = (
      await convertAdapterToGguf(source, config, { cacheDir: options.cacheDir! }, { dtype: options.dtype ?? 'F32' })
    ).path;
  } else ggufPath = path.resolve(source);
  await validateAdapterGguf(ggufPath, config);
  if (options.probe ?? true) await probeGgufInChild(modelGguf, ggufPath);
  return ggufPath;
}
