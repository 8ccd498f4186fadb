// GGUF conversion checked against the tfjs decoder: tiny random-weight checkpoints written by the real writers,
// converted, loaded by llama.cpp (node-llama-cpp's prebuilt CPU binary) and compared token by token and
// probability by probability; LoRA adapters attached in llama.cpp against the merged weights in tfjs; and the
// validator refusing broken files before llama.cpp (whose C asserts would end this process) sees them.
import * as tf from '@tensorflow/tfjs';
import { promises as fs } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, LlamaLogLevel, type Llama, type Token } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint, tinyCorpus } from '../../../testing/tiny-checkpoint.ts';
import { llamaConfig, type ModelConfig } from '../../../trainer/model/architecture.ts';
import { initBackend } from '../../../trainer/model/backend.ts';
import { chatMlTokenizerConfig, trainByteLevelBpe } from '../../../trainer/model/bpe-train.ts';
import { CHATML_TEMPLATE, ChatFormatter } from '../../../trainer/model/chat.ts';
import { loadCheckpoint, readConfig, saveCheckpoint } from '../../../trainer/model/checkpoint.ts';
import { Decoder } from '../../../trainer/model/decoder.ts';
import { LoadedPolicy } from '../../../trainer/model/loaded-policy.ts';
import { addLora, mergeLora, saveLora } from '../../../trainer/model/lora.ts';
import { saveTokenizerFiles, TextTokenizer } from '../../../trainer/model/tokenizer.ts';
import {
  encodeGgufHeader,
  GgufFormatError,
  gguf,
  readGgufHeader,
  writeGguf,
  type GgufValue,
} from '../../../trainer/serve/gguf.ts';
import {
  convertAdapterToGguf,
  convertCheckpointToGguf,
  ggufCachePath,
  permuteRopeRows,
} from '../../../trainer/serve/gguf-convert.ts';
import { GgufValidationError, validateAdapterGguf, validateModelGguf } from '../../../trainer/serve/gguf-validate.ts';
import { probeGgufInChild } from '../../../trainer/serve/llama-load.ts';

const STEPS = 24;
// Measured on the checkpoints below (F32 weights; llama.cpp keeps its KV cache in F16): max |Δp| 5e-4..1.8e-3;
// F16 weights: 2.0e-3, with 24/24 greedy agreement on the tiny checkpoint.
const PROB_TOL = 5e-3;
const PROB_TOL_F16 = 2e-2;

let work: string;
let llama: Llama;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'sweetloop-gguf-test-'));
  await initBackend('wasm');
  llama = await getLlama({ gpu: false, build: 'never', skipDownload: true, logLevel: LlamaLogLevel.error });
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

const PROMPT = [{ role: 'user' as const, content: 'What should the function return when the list is empty?' }];

/** A checkpoint of any config over the tiny ChatML tokenizer, written by saveCheckpoint; `edit` may change weights. */
async function writeCheckpoint(
  name: string,
  over: (vocab: number, eos: number, pad: number) => ModelConfig,
  edit?: (d: Decoder) => void,
): Promise<string> {
  const dir = join(work, name);
  const tokenizerJson = trainByteLevelBpe(tinyCorpus(), { vocabSize: 384 });
  const vocab = Object.keys(tokenizerJson.model.vocab).length;
  const cfg = over(vocab, tokenizerJson.model.vocab['<|im_end|>']!, tokenizerJson.model.vocab['<|endoftext|>']!);
  const d = new Decoder(cfg, { name, seed: 11, initStd: 0.3 });
  try {
    edit?.(d);
    await saveCheckpoint(dir, d);
  } finally {
    d.dispose();
  }
  await saveTokenizerFiles(dir, tokenizerJson, chatMlTokenizerConfig(CHATML_TEMPLATE));
  return dir;
}

/** Random biases (the Decoder initialises them to zero, which would hide a mis-permuted bias). */
function randomBiases(d: Decoder): void {
  let seed = 100;
  for (const [name, v] of d.params)
    if (name.endsWith('.bias')) v.assign(tf.randomNormal(v.shape, 0, 0.3, 'float32', seed++));
}

interface Trace {
  tokens: number[];
  /** Next-token distribution before each generated token. */
  probs: Float64Array[];
}

async function llamaGreedy(modelPath: string, ids: number[], vocab: number, adapterPath?: string): Promise<Trace> {
  const model = await llama.loadModel({ modelPath });
  try {
    const ctx = await model.createContext({
      sequences: 1,
      contextSize: 256,
      threads: 1,
      ...(adapterPath ? { lora: { adapters: [{ filePath: adapterPath }] } } : {}),
    });
    const seq = ctx.getSequence();
    const out: Trace = { tokens: [], probs: [] };
    const it = seq.evaluateWithMetadata(
      ids as Token[],
      { probabilities: true },
      { temperature: 0, yieldEogToken: true },
    );
    for await (const step of it) {
      const p = new Float64Array(vocab);
      for (const [id, v] of step.probabilities) p[id] = v;
      out.tokens.push(step.token);
      out.probs.push(p);
      if (out.tokens.length >= STEPS) break;
    }
    await ctx.dispose();
    return out;
  } finally {
    await model.dispose();
  }
}

async function tfjsGreedy(engine: LoadedPolicy, ids: number[]): Promise<Trace> {
  const [g] = await engine.generate([{ ids }], { maxTokens: STEPS, temperature: 0, eosTokenIds: [] });
  const logits = await engine.logits([...ids, ...g!.tokenIds.slice(0, -1)]);
  const probs = g!.tokenIds.map((_, t) => {
    const row = logits[ids.length - 1 + t]!;
    const m = Math.max(...row);
    const e = row.map((v) => Math.exp(v - m));
    const s = e.reduce((a, b) => a + b, 0);
    return Float64Array.from(e, (v) => v / s);
  });
  return { tokens: g!.tokenIds, probs };
}

function maxProbDiff(a: Trace, b: Trace): number {
  let m = 0;
  for (let t = 0; t < Math.min(a.probs.length, b.probs.length); t++) {
    for (let i = 0; i < a.probs[t]!.length; i++) m = Math.max(m, Math.abs(a.probs[t]![i]! - b.probs[t]![i]!));
  }
  return m;
}

async function compare(
  dir: string,
  gguf: string,
  adapterGguf?: string,
  engine?: LoadedPolicy,
): Promise<{ llama: Trace; tfjs: Trace; diff: number }> {
  const eng = engine ?? (await LoadedPolicy.load(dir));
  try {
    const ids = eng.encodePrompt({ messages: PROMPT });
    const t = await tfjsGreedy(eng, ids);
    const l = await llamaGreedy(gguf, ids, eng.model.config.vocabSize, adapterGguf);
    return { llama: l, tfjs: t, diff: maxProbDiff(l, t) };
  } finally {
    eng.dispose();
  }
}

describe('GGUF conversion against the tfjs decoder', () => {
  it('tiny checkpoint (tied embeddings, GQA): greedy tokens equal, probabilities close; converted once', async () => {
    const dir = await makeTinyCheckpoint({ dir: join(work, 'tiny') });
    const first = await convertCheckpointToGguf(dir, { cacheDir: join(work, 'cache') });
    expect(first.converted).toBe(true);
    expect(first.path).toBe(ggufCachePath(join(work, 'cache'), first.sourceSha256, 'model'));
    const again = await convertCheckpointToGguf(dir, { cacheDir: join(work, 'cache') });
    expect(again).toEqual({ ...first, converted: false });
    const h = await readGgufHeader(first.path);
    expect(h.tensors.some((t) => t.name === 'output.weight')).toBe(false);
    const r = await compare(dir, first.path);
    console.log(`tiny F32: greedy ${r.llama.tokens.length} tokens, max |Δp| ${r.diff.toExponential(2)}`);
    expect(r.llama.tokens).toEqual(r.tfjs.tokens);
    expect(r.diff).toBeLessThan(PROB_TOL);
  });

  it('untied head, llama3 rope scaling, q/k/v/o biases: equal greedy tokens, close probabilities', async () => {
    const dir = await writeCheckpoint(
      'scaled',
      (vocab, eos, pad) => ({
        ...llamaConfig({
          vocabSize: vocab,
          hiddenSize: 64,
          intermediateSize: 96,
          numLayers: 2,
          numHeads: 4,
          numKvHeads: 2,
          tieWordEmbeddings: false,
          qkvBias: true,
          eosTokenIds: [eos],
          padTokenId: pad,
          maxPositionEmbeddings: 512,
          ropeScaling: {
            type: 'llama3',
            factor: 8,
            lowFreqFactor: 0.25,
            highFreqFactor: 2,
            originalMaxPositionEmbeddings: 16,
          },
        }),
        outputBias: true,
      }),
      randomBiases,
    );
    const out = join(work, 'scaled.gguf');
    await convertCheckpointToGguf(dir, out);
    const h = await readGgufHeader(out);
    expect(h.tensors.map((t) => t.name)).toEqual(
      expect.arrayContaining(['output.weight', 'rope_freqs.weight', 'blk.0.attn_q.bias', 'blk.1.attn_output.bias']),
    );
    const r = await compare(dir, out);
    console.log(`scaled/untied/bias F32: greedy ${r.llama.tokens.length} tokens, max |Δp| ${r.diff.toExponential(2)}`);
    expect(r.llama.tokens).toEqual(r.tfjs.tokens);
    expect(r.diff).toBeLessThan(PROB_TOL);
  });

  it('qwen2 (NeoX rope, no permutation, q/k/v biases) converts and matches', async () => {
    const dir = await writeCheckpoint(
      'qwen',
      (vocab, eos, pad) => ({
        ...llamaConfig({
          vocabSize: vocab,
          hiddenSize: 64,
          intermediateSize: 96,
          numLayers: 2,
          numHeads: 4,
          numKvHeads: 2,
          tieWordEmbeddings: true,
          eosTokenIds: [eos],
          padTokenId: pad,
          maxPositionEmbeddings: 512,
        }),
        modelType: 'qwen2',
        qkvBias: true,
        rmsNormEps: 1e-6,
        ropeTheta: 1e6,
      }),
      randomBiases,
    );
    const out = join(work, 'qwen.gguf');
    await convertCheckpointToGguf(dir, out);
    expect((await validateModelGguf(out, await readConfig(dir))).architecture).toBe('qwen2');
    const r = await compare(dir, out);
    console.log(`qwen2 F32: greedy ${r.llama.tokens.length} tokens, max |Δp| ${r.diff.toExponential(2)}`);
    expect(r.llama.tokens).toEqual(r.tfjs.tokens);
    expect(r.diff).toBeLessThan(PROB_TOL);
  });

  it('F16 matrices stay close (looser tolerance: weights rounded to half precision)', async () => {
    const dir = join(work, 'tiny');
    const out = join(work, 'tiny-f16.gguf');
    await convertCheckpointToGguf(dir, out, { dtype: 'F16' });
    const r = await compare(dir, out);
    const agree = r.llama.tokens.findIndex((t, i) => t !== r.tfjs.tokens[i]);
    const n = agree < 0 ? r.llama.tokens.length : agree;
    console.log(
      `tiny F16: greedy agreement ${n}/${r.llama.tokens.length}, max |Δp| over agreeing steps ${r.diff.toExponential(2)}`,
    );
    expect(n).toBeGreaterThanOrEqual(8);
    expect(
      maxProbDiff({ tokens: [], probs: r.llama.probs.slice(0, n) }, { tokens: [], probs: r.tfjs.probs.slice(0, n) }),
    ).toBeLessThan(PROB_TOL_F16);
  });

  it("the Q/K permutation is convert_hf_to_gguf's: per head, rows [a0 a1 b0 b1] become [a0 b0 a1 b1]", () => {
    // Two heads of size 4, one column: head rows are (first half, second half).
    const rows = Float32Array.from([0, 1, 2, 3, 10, 11, 12, 13]);
    expect([...permuteRopeRows(rows, 2, 1)]).toEqual([0, 2, 1, 3, 10, 12, 11, 13]);
  });

  it('a LoRA adapter attached in llama.cpp matches the merged weights in tfjs', async () => {
    const dir = join(work, 'tiny');
    const { model } = await loadCheckpoint(dir, { name: 'lora-base', trainable: false });
    addLora(model, {
      rank: 4,
      alpha: 8,
      targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
      seed: 3,
    });
    let seed = 50;
    // B starts at zero (the adapter would change nothing): give it weight so the test can fail.
    for (const ad of model.adapters.values()) ad.b.assign(tf.randomNormal(ad.b.shape, 0, 0.3, 'float32', seed++));
    const adapterDir = join(work, 'adapter-v1');
    await saveLora(adapterDir, model);
    mergeLora(model);
    const config = await readConfig(dir);
    const conv = await convertAdapterToGguf(adapterDir, config, { cacheDir: join(work, 'cache') });
    expect(conv.path).toBe(ggufCachePath(join(work, 'cache'), conv.sourceSha256, 'adapter'));
    const v = await validateAdapterGguf(conv.path, config);
    expect(v).toMatchObject({ rank: 4, alpha: 8 });
    const base = await convertCheckpointToGguf(dir, { cacheDir: join(work, 'cache') });
    const tok = await TextTokenizer.load(dir);
    const merged = new LoadedPolicy(model, tok, ChatFormatter.fromTokenizer(tok), dir);
    const r = await compare(dir, base.path, conv.path, merged);
    console.log(
      `LoRA r=4 on all 7 modules, F32: greedy ${r.llama.tokens.length} tokens, max |Δp| ${r.diff.toExponential(2)}`,
    );
    expect(r.llama.tokens).toEqual(r.tfjs.tokens);
    expect(r.diff).toBeLessThan(PROB_TOL);
    // And it did change the model: the base alone decodes something else.
    const plain = await compare(dir, base.path);
    expect(plain.llama.tokens).not.toEqual(r.llama.tokens);
  });
});

describe('GGUF validation', () => {
  async function withMetadata(name: string, edit: (m: Map<string, GgufValue>) => void): Promise<string> {
    const src = (await convertCheckpointToGguf(join(work, 'tiny'), { cacheDir: join(work, 'cache') })).path;
    const h = await readGgufHeader(src);
    const bytes = await fs.readFile(src);
    const metadata = new Map(h.metadata);
    edit(metadata);
    const out = join(work, name);
    const tensors = h.tensors.map((t) => {
      const size = encodeGgufHeader(new Map(), [{ name: t.name, ne: t.ne, type: t.type as 0 }]).sizes[0]!;
      return {
        name: t.name,
        ne: t.ne,
        type: t.type as 0,
        bytes: () => bytes.subarray(h.dataOffset + t.offset, h.dataOffset + t.offset + size),
      };
    });
    await writeGguf(out, metadata, tensors);
    return out;
  }

  it('a truncated file is refused with a clear error', async () => {
    const src = (await convertCheckpointToGguf(join(work, 'tiny'), { cacheDir: join(work, 'cache') })).path;
    const bytes = await fs.readFile(src);
    for (const [name, len] of [
      ['header-cut.gguf', 200],
      ['data-cut.gguf', bytes.length - 100],
      ['empty.gguf', 0],
    ] as const) {
      const f = join(work, name);
      await fs.writeFile(f, bytes.subarray(0, len));
      const err = await validateModelGguf(f).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(GgufFormatError);
      expect(String((err as Error).message)).toMatch(/truncated|past the end/);
    }
    await fs.writeFile(join(work, 'not.gguf'), 'hello world, not a model at all');
    await expect(validateModelGguf(join(work, 'not.gguf'))).rejects.toThrow(/bad magic/);
  });

  it('a missing required key, an INT32 where llama.cpp reads UINT32, and a vocabulary that does not fit are refused', async () => {
    const noFf = await withMetadata('no-ff.gguf', (m) => m.delete('llama.feed_forward_length'));
    await expect(validateModelGguf(noFf)).rejects.toThrow(GgufValidationError);
    await expect(validateModelGguf(noFf)).rejects.toThrow(/required key llama\.feed_forward_length is missing/);
    const int32 = await withMetadata('int32.gguf', (m) => m.set('llama.block_count', gguf.i32(2)));
    await expect(validateModelGguf(int32)).rejects.toThrow(/llama\.block_count is INT32, llama\.cpp needs UINT32/);
    const shortVocab = await withMetadata('vocab.gguf', (m) => {
      const t = m.get('tokenizer.ggml.tokens')!;
      m.set('tokenizer.ggml.tokens', gguf.strings((t.value as string[]).slice(1)));
      m.set('tokenizer.ggml.token_type', gguf.i32s(new Array((t.value as string[]).length - 1).fill(1)));
    });
    await expect(validateModelGguf(shortVocab)).rejects.toThrow(
      /tokenizer\.ggml\.tokens has \d+ entries but token_embd\.weight has \d+ rows/,
    );
    const noMerges = await withMetadata('no-merges.gguf', (m) => m.delete('tokenizer.ggml.merges'));
    await expect(validateModelGguf(noMerges)).rejects.toThrow(/tokenizer\.ggml\.merges is missing/);
  });

  it('a file llama.cpp would abort on is loaded only in a child process: the probe fails, this process lives on', async () => {
    // Valid for our parser, but without feed_forward_length: llama.cpp stops the process that loads it.
    const noFf = await withMetadata('no-ff-probe.gguf', (m) => m.delete('llama.feed_forward_length'));
    await expect(probeGgufInChild(noFf)).rejects.toThrow(/llama\.cpp could not load/);
    const good = (await convertCheckpointToGguf(join(work, 'tiny'), { cacheDir: join(work, 'cache') })).path;
    await expect(probeGgufInChild(good)).resolves.toBeUndefined();
  });

  it('an adapter for another shape or with a missing half is refused', async () => {
    const config = await readConfig(join(work, 'tiny'));
    const adapter = join(work, 'bad-adapter.gguf');
    const base: [string, GgufValue][] = [
      ['general.architecture', gguf.str('llama')],
      ['general.type', gguf.str('adapter')],
      ['adapter.type', gguf.str('lora')],
      ['adapter.lora.alpha', gguf.f32(8)],
    ];
    const zeros = (n: number) => () => Buffer.alloc(n * 4);
    await writeGguf(adapter, new Map(base), [
      {
        name: 'blk.0.attn_q.weight.lora_a',
        ne: [config.hiddenSize + 1, 4],
        type: 0,
        bytes: zeros((config.hiddenSize + 1) * 4),
      },
      { name: 'blk.0.attn_q.weight.lora_b', ne: [4, config.hiddenSize], type: 0, bytes: zeros(4 * config.hiddenSize) },
      { name: 'blk.0.attn_k.weight.lora_a', ne: [config.hiddenSize, 4], type: 0, bytes: zeros(config.hiddenSize * 4) },
    ]);
    const err = (await validateAdapterGguf(adapter, config).catch((e: unknown) => e)) as GgufValidationError;
    expect(err).toBeInstanceOf(GgufValidationError);
    expect(err.problems.join('\n')).toMatch(/blk\.0\.attn_q\.weight: lora_a ne .* do not fit/);
    expect(err.problems.join('\n')).toMatch(/blk\.0\.attn_k\.weight needs both lora_a and lora_b/);
  });
});
