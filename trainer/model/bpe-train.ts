// A small byte-level BPE trainer that writes a Hugging Face `tokenizer.json` (the format Llama-3, Qwen2 and
// SmolLM ship). No maintained JavaScript library trains tokenizers (the `tokenizers` npm bindings need a
// native download; @huggingface/tokenizers only encodes), so the trainer lives here. Pre-tokenisation and
// byte mapping are done by @huggingface/tokenizers itself, with the very pre_tokenizer the written file
// declares, so training and encoding can never disagree on word boundaries.
import { Tokenizer } from '@huggingface/tokenizers';

/** Qwen2's split pattern: contractions, letter runs, single digits, punctuation runs, newlines, spaces. */
export const SPLIT_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

export const DEFAULT_SPECIAL_TOKENS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] as const;

export interface BpeTrainOptions {
  /** Total vocabulary: special tokens + 256 bytes + merges. Training stops earlier when no pair repeats. */
  vocabSize: number;
  /** Added as special tokens with the first ids, in this order. */
  specialTokens?: readonly string[];
  /** A pair must occur at least this often (weighted by word frequency) to be merged. */
  minFrequency?: number;
}

export interface AddedTokenJson {
  id: number;
  content: string;
  single_word: boolean;
  lstrip: boolean;
  rstrip: boolean;
  normalized: boolean;
  special: boolean;
}

/** The subset of Hugging Face's tokenizer.json this trainer writes (and tokenizer.ts reads through the library). */
export interface TokenizerJson {
  version: string;
  truncation: null;
  padding: null;
  added_tokens: AddedTokenJson[];
  normalizer: unknown;
  pre_tokenizer: unknown;
  post_processor: unknown;
  decoder: unknown;
  model: {
    type: 'BPE';
    dropout: null;
    unk_token: null;
    continuing_subword_prefix: null;
    end_of_word_suffix: null;
    fuse_unk: boolean;
    byte_fallback: boolean;
    ignore_merges: boolean;
    vocab: Record<string, number>;
    merges: string[];
  };
}

/** GPT-2's reversible byte -> printable character table, used by every byte-level BPE. */
export function bytesToUnicode(): string[] {
  const bs: number[] = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const table: string[] = new Array(256);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (bs.includes(b)) table[b] = String.fromCharCode(b);
    else table[b] = String.fromCharCode(256 + n++);
  }
  return table;
}

function skeleton(specials: readonly string[], vocab: Record<string, number>, merges: string[]): TokenizerJson {
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: specials.map((content, id) => ({
      id,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: { type: 'NFC' },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: SPLIT_PATTERN }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Learns merges from `texts` and returns a complete tokenizer.json object. Deterministic: the same texts in
 * the same order give the same file (ties between equally frequent pairs go to the earliest-seen pair ids).
 * Special-token strings inside the texts are cut out before counting, as the tokenizer never splits them.
 */
export function trainByteLevelBpe(texts: Iterable<string>, options: BpeTrainOptions): TokenizerJson {
  const specials = [...(options.specialTokens ?? DEFAULT_SPECIAL_TOKENS)];
  if (new Set(specials).size !== specials.length) throw new Error('bpe-train: duplicate special tokens');
  const minFrequency = options.minFrequency ?? 2;
  const base = specials.length + 256;
  if (!Number.isInteger(options.vocabSize) || options.vocabSize < base) {
    throw new Error(
      `bpe-train: vocabSize must be an integer >= ${base} (special tokens + 256 bytes), got ${options.vocabSize}`,
    );
  }

  // The library, configured exactly as the output will be, does normalisation and pre-tokenisation.
  const byteChars = bytesToUnicode();
  const baseVocab: Record<string, number> = {};
  specials.forEach((s, i) => (baseVocab[s] = i));
  byteChars.forEach((c, b) => (baseVocab[c] = specials.length + b));
  const probe = new Tokenizer(skeleton(specials, baseVocab, []), {});
  const splitSpecials = specials.length ? new RegExp(specials.map(escapeRegExp).join('|'), 'g') : null;

  const wordFreq = new Map<string, number>();
  for (const text of texts) {
    const pieces = splitSpecials ? text.split(splitSpecials) : [text];
    for (const piece of pieces) {
      if (!piece) continue;
      const normalized = probe.normalizer ? probe.normalizer.normalize(piece) : piece;
      const words = probe.pre_tokenizer ? probe.pre_tokenizer.pre_tokenize(normalized) : [normalized];
      for (const w of words) if (w) wordFreq.set(w, (wordFreq.get(w) ?? 0) + 1);
    }
  }

  const symbols: string[] = [];
  const symbolId = new Map<string, number>();
  for (const [s, id] of Object.entries(baseVocab)) {
    symbols[id] = s;
    symbolId.set(s, id);
  }
  const words: number[][] = [];
  const freqs: number[] = [];
  for (const [w, f] of wordFreq) {
    words.push(
      [...w].map((ch) => {
        const id = symbolId.get(ch);
        if (id === undefined)
          throw new Error(`bpe-train: pre-tokenizer produced a non-byte character ${JSON.stringify(ch)}`);
        return id;
      }),
    );
    freqs.push(f);
  }

  // Pair key: a * 2^21 + b stays an exact integer for vocabularies up to two million symbols.
  const SHIFT = 2 ** 21;
  const pairCount = new Map<number, number>();
  const pairWords = new Map<number, Set<number>>();
  const addWordPairs = (wi: number, sign: 1 | -1): void => {
    const w = words[wi]!;
    const f = freqs[wi]! * sign;
    for (let i = 0; i + 1 < w.length; i++) {
      const key = w[i]! * SHIFT + w[i + 1]!;
      const c = (pairCount.get(key) ?? 0) + f;
      if (c === 0) pairCount.delete(key);
      else pairCount.set(key, c);
      if (sign > 0) {
        let set = pairWords.get(key);
        if (!set) pairWords.set(key, (set = new Set()));
        set.add(wi);
      }
    }
  };
  for (let wi = 0; wi < words.length; wi++) addWordPairs(wi, 1);

  const merges: string[] = [];
  while (symbols.length < options.vocabSize) {
    let bestKey = -1;
    let bestCount = 0;
    for (const [key, count] of pairCount) {
      if (count > bestCount || (count === bestCount && key < bestKey)) {
        bestKey = key;
        bestCount = count;
      }
    }
    if (bestKey < 0 || bestCount < minFrequency) break;
    const a = Math.floor(bestKey / SHIFT);
    const b = bestKey - a * SHIFT;
    const merged = symbols[a]! + symbols[b]!;
    const newId = symbols.length;
    symbols.push(merged);
    symbolId.set(merged, newId);
    merges.push(`${symbols[a]} ${symbols[b]}`);

    const affected = pairWords.get(bestKey);
    pairWords.delete(bestKey);
    if (!affected) continue;
    for (const wi of affected) {
      const w = words[wi]!;
      let has = false;
      for (let i = 0; i + 1 < w.length; i++)
        if (w[i] === a && w[i + 1] === b) {
          has = true;
          break;
        }
      if (!has) continue;
      addWordPairs(wi, -1);
      const out: number[] = [];
      for (let i = 0; i < w.length; i++) {
        if (i + 1 < w.length && w[i] === a && w[i + 1] === b) {
          out.push(newId);
          i++;
        } else out.push(w[i]!);
      }
      words[wi] = out;
      addWordPairs(wi, 1);
    }
  }

  const vocab: Record<string, number> = {};
  symbols.forEach((s, i) => (vocab[s] = i));
  return skeleton(specials, vocab, merges);
}

/** tokenizer_config.json to go with a trained tokenizer: ChatML specials and the chat template. */
export function chatMlTokenizerConfig(
  chatTemplate: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    tokenizer_class: 'PreTrainedTokenizerFast',
    bos_token: null,
    eos_token: '<|im_end|>',
    pad_token: '<|endoftext|>',
    unk_token: null,
    add_bos_token: false,
    add_eos_token: false,
    clean_up_tokenization_spaces: false,
    model_max_length: 2048,
    chat_template: chatTemplate,
    ...extra,
  };
}
