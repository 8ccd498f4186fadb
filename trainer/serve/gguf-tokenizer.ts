// trainer/serve/: serving a policy (engine contract, llama.cpp engine, GGUF files, OpenAI-compatible server).
// Files here may import tasks/, prisma/ and trainer/ only.
//
// A checkpoint's tokenizer as the tokenizer.* keys of its GGUF file (gguf-convert.ts): the byte-level BPE
// tokenizer as tokenizer.ggml.model "gpt2" + tokens + token types + merges, with a tokenizer.ggml.pre naming the
// split pattern. Serving encodes prompts with our own tokenizer, so this only has to be complete enough for
// llama.cpp to load the file.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { ModelConfig } from '../model/architecture.ts';
import { TextTokenizer } from '../model/tokenizer.ts';
import { gguf, type GgufValue } from './gguf.ts';

// Split patterns llama.cpp knows by name (llama-vocab.cpp's pre-tokenizer types).
const KNOWN_PRE: [string, string][] = [
  [
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    'qwen2',
  ],
  [
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    'llama-bpe',
  ],
];

export type Json = Record<string, unknown>;

function splitPattern(preTokenizer: unknown): string | undefined {
  const p = preTokenizer as Json | null;
  if (!p || typeof p !== 'object') return undefined;
  if (p.type === 'Split') return ((p.pattern as Json | undefined)?.Regex as string | undefined) ?? undefined;
  if (p.type === 'Sequence' && Array.isArray(p.pretokenizers)) {
    for (const q of p.pretokenizers) {
      const r = splitPattern(q);
      if (r) return r;
    }
  }
  return undefined;
}

function isByteLevel(x: unknown): boolean {
  const p = x as Json | null;
  if (!p || typeof p !== 'object') return false;
  if (p.type === 'ByteLevel') return true;
  return p.type === 'Sequence' && Array.isArray(p.pretokenizers) && p.pretokenizers.some(isByteLevel);
}

const TOKEN_NORMAL = 1;
const TOKEN_CONTROL = 3;
const TOKEN_USER_DEFINED = 4;
const TOKEN_UNUSED = 5;

/** The tokenizer.* keys for a byte-level BPE tokenizer.json; refuses anything else with a clear error. */
export async function tokenizerMetadata(dir: string, cfg: ModelConfig): Promise<[string, GgufValue][]> {
  const file = path.join(dir, 'tokenizer.json');
  let tj: Json;
  try {
    tj = JSON.parse(await fs.readFile(file, 'utf8')) as Json;
  } catch (err) {
    throw new Error(`${file}: cannot read the tokenizer for GGUF conversion: ${(err as Error).message}`);
  }
  const model = tj.model as Json | undefined;
  if (
    !model ||
    model.type !== 'BPE' ||
    model.byte_fallback === true ||
    !isByteLevel(tj.pre_tokenizer) ||
    (tj.decoder as Json | undefined)?.type !== 'ByteLevel'
  ) {
    throw new Error(
      `${file}: only byte-level BPE tokenizers (GPT-2 style: BPE model, ByteLevel pre-tokenizer and decoder) convert to GGUF here`,
    );
  }
  const tok = new TextTokenizer({
    tokenizerJson: tj,
    tokenizerConfig: (await readOptionalJson(path.join(dir, 'tokenizer_config.json'))) ?? {},
    ...(await generationConfig(dir)),
  });
  if (tok.vocabSize > cfg.vocabSize)
    throw new Error(`${file}: the tokenizer has ${tok.vocabSize} ids but the model's vocabulary is ${cfg.vocabSize}`);
  const tokens: string[] = new Array(cfg.vocabSize);
  const types: number[] = new Array(cfg.vocabSize).fill(TOKEN_UNUSED);
  for (const [text, id] of Object.entries(model.vocab as Record<string, number>)) {
    if (id < cfg.vocabSize) {
      tokens[id] = text;
      types[id] = TOKEN_NORMAL;
    }
  }
  for (const t of (tj.added_tokens as { id: number; content: string; special: boolean }[] | undefined) ?? []) {
    if (t.id < cfg.vocabSize) {
      tokens[t.id] = t.content;
      types[t.id] = t.special ? TOKEN_CONTROL : TOKEN_USER_DEFINED;
    }
  }
  // Embedding rows past the tokenizer (padding, as Qwen2 has) still need a name; they are never produced.
  for (let id = 0; id < cfg.vocabSize; id++) if (tokens[id] === undefined) tokens[id] = `[PAD${id}]`;
  const merges = ((model.merges as (string | [string, string])[] | undefined) ?? []).map((m) =>
    Array.isArray(m) ? m.join(' ') : m,
  );
  const pattern = splitPattern(tj.pre_tokenizer);
  const pre = KNOWN_PRE.find(([p]) => p === pattern)?.[1] ?? 'default';
  const out: [string, GgufValue][] = [
    ['tokenizer.ggml.model', gguf.str('gpt2')],
    ['tokenizer.ggml.pre', gguf.str(pre)],
    ['tokenizer.ggml.tokens', gguf.strings(tokens)],
    ['tokenizer.ggml.token_type', gguf.i32s(types)],
    ['tokenizer.ggml.merges', gguf.strings(merges)],
    ['tokenizer.ggml.add_bos_token', gguf.bool(false)],
    ['tokenizer.ggml.add_eos_token', gguf.bool(false)],
  ];
  const eos = tok.eosTokenIds[0] ?? cfg.eosTokenIds[0];
  if (eos !== undefined) out.push(['tokenizer.ggml.eos_token_id', gguf.u32(eos)]);
  const bos = tok.bosTokenId ?? cfg.bosTokenId;
  if (bos !== undefined && bos !== null) out.push(['tokenizer.ggml.bos_token_id', gguf.u32(bos)]);
  out.push(['tokenizer.ggml.padding_token_id', gguf.u32(tok.padTokenId)]);
  if (tok.chatTemplate) out.push(['tokenizer.chat_template', gguf.str(tok.chatTemplate)]);
  return out;
}

/** A JSON file that may be missing (undefined); one that is there must parse. */
export async function readOptionalJson(file: string): Promise<Json | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  try {
    return JSON.parse(text) as Json;
  } catch (err) {
    throw new Error(`${file}: not valid JSON: ${(err as Error).message}`);
  }
}

async function generationConfig(dir: string): Promise<{ generationConfig?: Json }> {
  const g = await readOptionalJson(path.join(dir, 'generation_config.json'));
  return g ? { generationConfig: g } : {};
}
