// trainer/serve/: serving a policy. Files here may import tasks/, prisma/ and trainer/ only (and their npm dependencies).
//
// A foreign GGUF model: a file someone else made (Qwen2.5-Instruct, Llama-3.2-Instruct, SmolLM2-Instruct, at any
// quantization), served by the project's llama.cpp engine with the file's own vocabulary and chat template, not
// the starter's tokenizer. inspectForeignGguf checks it before anything loads it (gguf-validate.ts: every key and
// tensor llama.cpp needs, so a bad file is refused with the fault named instead of aborting the process) and
// returns what a version records as provenance (file, sha256, quantization, window). ggufPromptCodec turns a
// dialogue into the prompt llama.cpp decodes: the file's tokenizer.chat_template rendered by trainer/model/chat.ts
// (the same Jinja renderer as transformers' apply_chat_template) and tokenized by llama.cpp with the file's
// vocabulary (model.tokenize, special tokens parsed).
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { LlamaModel, Token } from 'node-llama-cpp';
import type { ChatMessage } from '../../tasks/agent.ts';
import { ChatFormatter } from '../model/chat.ts';
import { GgufType, type GgufHeader } from './gguf.ts';
import { GgufValidationError, validateModelGguf } from './gguf-validate.ts';

/** llama.cpp's general.file_type names (llama_ftype), for provenance. */
const FILE_TYPES: Record<number, string> = {
  0: 'F32',
  1: 'F16',
  2: 'Q4_0',
  3: 'Q4_1',
  7: 'Q8_0',
  8: 'Q5_0',
  9: 'Q5_1',
  10: 'Q2_K',
  11: 'Q3_K_S',
  12: 'Q3_K_M',
  13: 'Q3_K_L',
  14: 'Q4_K_S',
  15: 'Q4_K_M',
  16: 'Q5_K_S',
  17: 'Q5_K_M',
  18: 'Q6_K',
  19: 'IQ2_XXS',
  20: 'IQ2_XS',
  21: 'Q2_K_S',
  22: 'IQ3_XS',
  23: 'IQ3_XXS',
  24: 'IQ1_S',
  25: 'IQ4_NL',
  26: 'IQ3_S',
  27: 'IQ3_M',
  28: 'IQ2_S',
  29: 'IQ2_M',
  30: 'IQ4_XS',
  31: 'IQ1_M',
  32: 'BF16',
  36: 'TQ1_0',
  37: 'TQ2_0',
  38: 'MXFP4_MOE',
};

/** What a gguf version records about its file (PolicyVersion.serving, and each turn's provenance). */
export interface ForeignGgufInfo {
  file: string;
  sha256: string;
  /** general.file_type's name (Q4_K_M, Q8_0, F16, ...), or 'unknown' when the file does not say. */
  quantization: string;
  architecture: 'llama' | 'qwen2';
  /** general.name, when the file has one. */
  modelName: string | null;
  /** Tokens the model was trained to attend over (<arch>.context_length). */
  contextLength: number;
  vocabSize: number;
  sizeBytes: number;
}

export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function metaString(h: GgufHeader, key: string): string | undefined {
  const v = h.metadata.get(key);
  return v?.type === GgufType.STRING ? String(v.value) : undefined;
}

/**
 * Validates a foreign GGUF model and summarises it; throws GgufValidationError naming every fault (the format's,
 * llama.cpp's required keys and shapes, and a missing chat template: the agent's prompts are rendered with it).
 */
export async function inspectForeignGguf(file: string): Promise<ForeignGgufInfo> {
  const s = await validateModelGguf(file);
  if (!metaString(s.header, 'tokenizer.chat_template')) {
    throw new GgufValidationError(file, [
      "it has no tokenizer.chat_template: the agent renders its prompts with the file's own chat template (use an instruct model's GGUF)",
    ]);
  }
  try {
    new ChatFormatter(metaString(s.header, 'tokenizer.chat_template')!);
  } catch (err) {
    throw new GgufValidationError(file, [`its tokenizer.chat_template ${(err as Error).message}`]);
  }
  const ft = s.header.metadata.get('general.file_type');
  const quantization =
    ft && ft.type === GgufType.UINT32 ? (FILE_TYPES[Number(ft.value)] ?? `file_type ${Number(ft.value)}`) : 'unknown';
  return {
    file,
    sha256: await sha256File(file),
    quantization,
    architecture: s.architecture,
    modelName: metaString(s.header, 'general.name') ?? null,
    contextLength: s.contextLength,
    vocabSize: s.vocabSize,
    sizeBytes: s.header.fileSize,
  };
}

/** How the llama.cpp engine turns a dialogue into prompt tokens and tokens back into text. */
export interface PromptCodec {
  /** The dialogue rendered with the generation prompt, as token ids. */
  encode(messages: readonly ChatMessage[]): number[];
  decode(ids: readonly number[]): string;
  /** Whether a token ends the reply (end of sequence or of turn). */
  isEnd(id: number): boolean;
  /** Ids the vocabulary defines: embedding rows past them are never sampled. */
  readonly vocabSize: number;
}

/**
 * The prompt codec of a foreign GGUF loaded in llama.cpp: the file's chat template (with its BOS/EOS token
 * texts), tokenized by llama.cpp with special tokens parsed; a BOS token is put first when the file asks for one
 * (tokenizer.ggml.add_bos_token) and the template did not render it, as llama.cpp's own server does.
 */
export function ggufPromptCodec(model: LlamaModel, template: string, vocabSize: number): PromptCodec {
  const specials: Record<string, string> = {};
  if (model.tokens.bosString) specials.bos_token = model.tokens.bosString;
  if (model.tokens.eosString) specials.eos_token = model.tokens.eosString;
  const chat = new ChatFormatter(template, specials);
  const bos = model.tokens.bos;
  const prependBos = bos !== null && model.tokens.shouldPrependBosToken;
  return {
    encode(messages) {
      const ids = model.tokenize(chat.format(messages, { addGenerationPrompt: true }), true) as number[];
      return prependBos && ids[0] !== bos ? [bos as number, ...ids] : ids;
    },
    decode: (ids) => model.detokenize(ids as Token[], false),
    isEnd: (id) => model.isEogToken(id as Token),
    vocabSize,
  };
}
