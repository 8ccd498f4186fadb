// Tiny checkpoints for the model-inference tests, made through the real writers (saveCheckpoint, the BPE
// trainer, saveTokenizerFiles) so that what the tests load is exactly what the loaders must read in the field.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { llamaConfig } from '../trainer/model/architecture.ts';
import { chatMlTokenizerConfig, trainByteLevelBpe } from '../trainer/model/bpe-train.ts';
import { CHATML_TEMPLATE } from '../trainer/model/chat.ts';
import { saveCheckpoint } from '../trainer/model/checkpoint.ts';
import { Decoder } from '../trainer/model/decoder.ts';
import { saveTokenizerFiles } from '../trainer/model/tokenizer.ts';

export function tinyCorpus(): string[] {
  const out: string[] = [];
  for (let i = 0; i < 40; i++) {
    out.push(`What should the function return when the list is empty? It should return ${i}.`);
    out.push(`def scale(values, factor=${i}):\n    return [v * factor for v in values]\n`);
    out.push(`I WANT TO ANSWER: <html><body class="p-${i % 8}">Hello</body></html>`);
  }
  return out;
}

export interface TinyOptions {
  dir?: string;
  seed?: number;
  vocabSize?: number;
  hiddenSize?: number;
  numLayers?: number;
  /** Larger than HF's 0.02 so random logits are peaked enough for greedy decoding to have no near-ties. */
  initStd?: number;
  maxPositionEmbeddings?: number;
}

/** Writes a random-weight Llama checkpoint with a trained ChatML tokenizer; returns its directory. */
export async function makeTinyCheckpoint(options: TinyOptions = {}): Promise<string> {
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'tiny-ckpt-')));
  const tokenizerJson = trainByteLevelBpe(tinyCorpus(), { vocabSize: options.vocabSize ?? 384 });
  const vocabSize = Object.keys(tokenizerJson.model.vocab).length;
  const hidden = options.hiddenSize ?? 32;
  const config = llamaConfig({
    vocabSize,
    hiddenSize: hidden,
    intermediateSize: hidden * 2,
    numLayers: options.numLayers ?? 2,
    numHeads: 4,
    numKvHeads: 2,
    maxPositionEmbeddings: options.maxPositionEmbeddings ?? 512,
    eosTokenIds: [tokenizerJson.model.vocab['<|im_end|>']!],
    padTokenId: tokenizerJson.model.vocab['<|endoftext|>']!,
  });
  const model = new Decoder(config, { name: 'tiny', seed: options.seed ?? 1, initStd: options.initStd ?? 0.3 });
  try {
    await saveCheckpoint(dir, model);
  } finally {
    model.dispose();
  }
  await saveTokenizerFiles(dir, tokenizerJson, chatMlTokenizerConfig(CHATML_TEMPLATE));
  return dir;
}

/** The foreign model's chat template: not ChatML, with a BOS token and role markers of its own (Zephyr-like). */
export const FOREIGN_TEMPLATE =
  "{{ bos_token }}{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] + '<|end|>\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}";

/** The same rendering written out by hand, to check what the engine sent without trusting its renderer. */
export function renderForeign(messages: readonly { role: string; content: string }[]): string {
  return '<s>' + messages.map((m) => `<|${m.role}|>\n${m.content}<|end|>\n`).join('') + '<|assistant|>\n';
}

export interface ForeignGguf {
  file: string;
  /** The file's vocabulary as a Hugging Face tokenizer.json (an independent tokenizer for the checks). */
  tokenizerJson: Record<string, unknown>;
}

/**
 * A GGUF file as someone else would publish it: a random-weight Llama with its own byte-level BPE vocabulary
 * (other special tokens, other merges than the starter's) and FOREIGN_TEMPLATE in its metadata, written by the
 * project's own GGUF writer (trainer/serve/gguf-convert.ts) from a scratch directory that is then deleted, so
 * nothing of ours is left beside the file. `metadata` changes keys (a malformed file: drop a required one).
 */
export async function makeForeignGguf(
  file: string,
  o: {
    seed?: number;
    maxPositionEmbeddings?: number;
    metadata?: { set?: [string, import('../trainer/serve/gguf.ts').GgufValue][]; drop?: string[] };
  } = {},
): Promise<ForeignGguf> {
  const { rm } = await import('node:fs/promises');
  const { writeCheckpointGguf } = await import('../trainer/serve/gguf-convert.ts');
  const { gguf } = await import('../trainer/serve/gguf.ts');
  const { agentSystemPrompt } = await import('../tasks/protocol.ts');
  const scratch = await mkdtemp(join(tmpdir(), 'foreign-src-'));
  try {
    const specials = ['<s>', '<|end|>', '<|system|>', '<|user|>', '<|assistant|>'];
    const corpus = [
      ...tinyCorpus().map((t) => t.toUpperCase()),
      agentSystemPrompt('backend'),
      agentSystemPrompt('frontend'),
      agentSystemPrompt('backend', 2),
    ];
    const tokenizerJson = trainByteLevelBpe(corpus, { vocabSize: 700, specialTokens: specials });
    const vocab = tokenizerJson.model.vocab;
    const config = llamaConfig({
      vocabSize: Object.keys(vocab).length,
      hiddenSize: 32,
      intermediateSize: 64,
      numLayers: 2,
      numHeads: 4,
      numKvHeads: 2,
      maxPositionEmbeddings: o.maxPositionEmbeddings ?? 8192,
      eosTokenIds: [vocab['<|end|>']!],
      padTokenId: vocab['<|end|>']!,
    });
    const model = new Decoder(config, { name: 'foreign', seed: o.seed ?? 5, initStd: 0.3 });
    try {
      await saveCheckpoint(scratch, model);
    } finally {
      model.dispose();
    }
    await saveTokenizerFiles(scratch, tokenizerJson, {
      tokenizer_class: 'PreTrainedTokenizerFast',
      bos_token: '<s>',
      eos_token: '<|end|>',
      pad_token: '<|end|>',
      add_bos_token: false,
      clean_up_tokenization_spaces: false,
      chat_template: FOREIGN_TEMPLATE,
    });
    await writeCheckpointGguf(scratch, file, {
      dtype: 'F16',
      metadata: {
        set: [['general.name', gguf.str('Foreign-Tiny-Instruct')], ...(o.metadata?.set ?? [])],
        drop: o.metadata?.drop ?? [],
      },
    });
    return { file, tokenizerJson: tokenizerJson as unknown as Record<string, unknown> };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
