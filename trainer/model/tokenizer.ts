// The model's tokenizer, read from a Hugging Face model directory (tokenizer.json + tokenizer_config.json,
// and generation_config.json for extra end-of-sequence ids) through @huggingface/tokenizers.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';

type TokenLike = string | { content: string } | null | undefined;

function tokenContent(t: TokenLike): string | undefined {
  if (t == null) return undefined;
  return typeof t === 'string' ? t : t.content;
}

async function readJson(path: string, what: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new Error(`tokenizer: cannot read ${what} at ${path}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`tokenizer: ${what} at ${path} is not valid JSON: ${(err as Error).message}`);
  }
}

export interface TextTokenizerParts {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig?: Record<string, unknown>;
  generationConfig?: Record<string, unknown>;
}

export class TextTokenizer {
  private readonly tok: Tokenizer;
  /** Size of the id space (highest id + 1), which the model's embedding must cover. */
  readonly vocabSize: number;
  readonly bosToken: string | undefined;
  readonly eosToken: string | undefined;
  readonly padToken: string | undefined;
  readonly bosTokenId: number | undefined;
  /** Every id that ends a generation: tokenizer_config's eos_token plus generation_config's eos_token_id(s). */
  readonly eosTokenIds: readonly number[];
  /** Used for left padding in batches; falls back to the first end-of-sequence id. */
  readonly padTokenId: number;
  readonly chatTemplate: string | undefined;
  /** Special (added) tokens by content. */
  readonly specialTokens: ReadonlyMap<string, number>;
  readonly config: Readonly<Record<string, unknown>>;

  constructor(parts: TextTokenizerParts) {
    const config = parts.tokenizerConfig ?? {};
    this.config = config;
    // The library applies clean_up_tokenization_spaces by default, which is not a round trip (" ." -> ".").
    // HF's own default for byte-level models is the config's value; absent means false in recent files.
    const libConfig = { ...config, clean_up_tokenization_spaces: config.clean_up_tokenization_spaces === true };
    try {
      this.tok = new Tokenizer(parts.tokenizerJson, libConfig);
    } catch (err) {
      throw new Error(`tokenizer: tokenizer.json was not understood: ${(err as Error).message}`);
    }
    const vocab = this.tok.get_vocab(true);
    let maxId = -1;
    for (const id of vocab.values()) if (id > maxId) maxId = id;
    this.vocabSize = maxId + 1;

    const specials = new Map<string, number>();
    for (const [id, t] of this.tok.get_added_tokens_decoder()) if (t.special) specials.set(t.content, id);
    this.specialTokens = specials;

    const idOf = (t: string | undefined): number | undefined => (t === undefined ? undefined : this.tok.token_to_id(t));
    this.bosToken = tokenContent(config.bos_token as TokenLike);
    this.eosToken = tokenContent(config.eos_token as TokenLike);
    this.padToken = tokenContent(config.pad_token as TokenLike);
    this.bosTokenId = idOf(this.bosToken);
    const eos = new Set<number>();
    const e = idOf(this.eosToken);
    if (e !== undefined) eos.add(e);
    const genEos = parts.generationConfig?.eos_token_id;
    for (const id of Array.isArray(genEos) ? genEos : genEos === undefined || genEos === null ? [] : [genEos]) {
      if (typeof id === 'number') eos.add(id);
    }
    this.eosTokenIds = [...eos];
    const pad = idOf(this.padToken) ?? this.eosTokenIds[0];
    if (pad === undefined)
      throw new Error('tokenizer: neither pad_token nor eos_token is set in tokenizer_config.json');
    this.padTokenId = pad;

    const tpl = config.chat_template;
    if (typeof tpl === 'string') this.chatTemplate = tpl;
    else if (Array.isArray(tpl)) {
      // Newer files list named templates; the one named "default" is what apply_chat_template uses.
      const named = tpl as { name?: string; template?: string }[];
      this.chatTemplate = (named.find((t) => t.name === 'default') ?? named[0])?.template;
    } else this.chatTemplate = undefined;
  }

  /** Reads tokenizer.json, tokenizer_config.json (optional) and generation_config.json (optional) from `dir`. */
  static async load(dir: string): Promise<TextTokenizer> {
    const tokenizerJson = await readJson(join(dir, 'tokenizer.json'), 'tokenizer.json');
    const cfgPath = join(dir, 'tokenizer_config.json');
    const genPath = join(dir, 'generation_config.json');
    const tokenizerConfig = existsSync(cfgPath) ? await readJson(cfgPath, 'tokenizer_config.json') : {};
    const generationConfig = existsSync(genPath) ? await readJson(genPath, 'generation_config.json') : undefined;
    return new TextTokenizer({ tokenizerJson, tokenizerConfig, ...(generationConfig ? { generationConfig } : {}) });
  }

  /**
   * Text to ids. Special-token strings in the text become their ids. `addSpecialTokens` (default false)
   * applies the post-processor (e.g. Llama-3's <|begin_of_text|>): off by default because our prompts come
   * from the chat template, which writes any BOS itself, as HF's apply_chat_template does.
   */
  encode(text: string, options: { addSpecialTokens?: boolean } = {}): number[] {
    if (text.length === 0) return [];
    return this.tok.encode(text, { add_special_tokens: options.addSpecialTokens ?? false }).ids;
  }

  /** Ids to text. Incomplete UTF-8 at the end decodes to U+FFFD, as in HF. */
  decode(ids: readonly number[], options: { skipSpecialTokens?: boolean } = {}): string {
    if (ids.length === 0) return '';
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize)
        throw new Error(`tokenizer: id ${id} is outside the vocabulary (0..${this.vocabSize - 1})`);
    }
    return this.tok.decode([...ids], { skip_special_tokens: options.skipSpecialTokens ?? false });
  }

  tokenToId(token: string): number | undefined {
    return this.tok.token_to_id(token);
  }

  idToToken(id: number): string | undefined {
    return this.tok.id_to_token(id);
  }

  isSpecial(id: number): boolean {
    const t = this.tok.id_to_token(id);
    return t !== undefined && this.specialTokens.get(t) === id;
  }
}

/** Writes tokenizer.json and tokenizer_config.json into a model directory (each replaced atomically). */
export async function saveTokenizerFiles(
  dir: string,
  tokenizerJson: unknown,
  tokenizerConfig: Record<string, unknown>,
): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [name, value] of [
    ['tokenizer.json', tokenizerJson],
    ['tokenizer_config.json', tokenizerConfig],
  ] as const) {
    const tmp = join(dir, `${name}.tmp-${process.pid}`);
    await writeFile(tmp, JSON.stringify(value, null, name === 'tokenizer.json' ? 0 : 2) + '\n');
    await rename(tmp, join(dir, name));
  }
}
