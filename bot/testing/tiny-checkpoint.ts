// Tiny checkpoints for the model-inference tests, made through the real writers (saveCheckpoint, the BPE
// trainer, saveTokenizerFiles) so that what the tests load is exactly what the loaders must read in the field.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { llamaConfig } from '../../trainer/model/architecture.ts';
import { chatMlTokenizerConfig, trainByteLevelBpe } from '../../trainer/model/bpe-train.ts';
import { CHATML_TEMPLATE } from '../../trainer/model/chat.ts';
import { saveCheckpoint } from '../../trainer/model/checkpoint.ts';
import { Decoder } from '../../trainer/model/decoder.ts';
import { saveTokenizerFiles } from '../../trainer/model/tokenizer.ts';

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
