import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rm } from 'node:fs/promises';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../../trainer/model/backend.ts';
import { LoadedPolicy } from '../../../trainer/model/loaded-policy.ts';
import { loadCheckpoint } from '../../../trainer/model/checkpoint.ts';
import { Decoder } from '../../../trainer/model/decoder.ts';
import { descendingOrder, generate, sampleToken } from '../../../trainer/model/generate.ts';
import { seededRandom } from '../../../tasks/random.ts';
import { completionLogprobs, completionLogprobValues, sharedPrefix } from '../../../trainer/model/logprobs.ts';
import { makeTinyCheckpoint } from '../../../testing/tiny-checkpoint.ts';

let dir: string;
let engine: LoadedPolicy;
let prompts: number[][];
let trainable: Decoder;

beforeAll(async () => {
  await initBackend();
  dir = await makeTinyCheckpoint({ seed: 3 });
  engine = await LoadedPolicy.load(dir);
  trainable = (await loadCheckpoint(dir, { name: 'trainable', trainable: true })).model;
  // Different lengths, so a batch is left-padded.
  prompts = ['def scale(values', 'What should the function return when', 'I', 'It should return 7.\n<|im_end|>'].map(
    (s) => engine.tokenizer.encode(s),
  );
});

afterAll(async () => {
  engine?.dispose();
  trainable?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const noEos = { eosTokenIds: [] as number[] };

describe('generation', () => {
  it('is reproducible with a seed and varies without one', async () => {
    const a = await generate(engine.model, engine.tokenizer, prompts, {
      temperature: 1,
      maxTokens: 24,
      seed: 11,
      ...noEos,
    });
    const b = await generate(engine.model, engine.tokenizer, prompts, {
      temperature: 1,
      maxTokens: 24,
      seed: 11,
      ...noEos,
    });
    const c = await generate(engine.model, engine.tokenizer, prompts, {
      temperature: 1,
      maxTokens: 24,
      seed: 12,
      ...noEos,
    });
    expect(b).toEqual(a);
    expect(c.map((r) => r.tokenIds)).not.toEqual(a.map((r) => r.tokenIds));
    for (const r of a) {
      expect(r.tokenIds).toHaveLength(24);
      expect(r.finishReason).toBe('length');
      expect(r.text).toBe(engine.tokenizer.decode(r.tokenIds));
    }
  });

  it('gives each row of a batch exactly what it generates alone (greedy)', async () => {
    const batched = await generate(engine.model, engine.tokenizer, prompts, {
      temperature: 0,
      maxTokens: 20,
      ...noEos,
    });
    for (const [i, p] of prompts.entries()) {
      const [alone] = await generate(engine.model, engine.tokenizer, [p], { temperature: 0, maxTokens: 20, ...noEos });
      expect(batched[i]!.tokenIds).toEqual(alone!.tokenIds);
      expect(batched[i]!.promptTokens).toBe(p.length);
      for (const [j, lp] of alone!.tokenLogprobs.entries()) expect(batched[i]!.tokenLogprobs[j]).toBeCloseTo(lp, 4);
    }
    // Seeded sampling: row 0 of a batch uses the same stream as a prompt sent alone.
    const [s0] = await generate(engine.model, engine.tokenizer, prompts, {
      temperature: 1,
      maxTokens: 16,
      seed: 5,
      ...noEos,
    });
    const [a0] = await generate(engine.model, engine.tokenizer, [prompts[0]!], {
      temperature: 1,
      maxTokens: 16,
      seed: 5,
      ...noEos,
    });
    expect(s0!.tokenIds).toEqual(a0!.tokenIds);
  });

  it('samples row i from seeds[i] as that prompt alone, whatever else is in the batch', async () => {
    const seeds = [5, 91, 7, 12];
    const batched = await generate(engine.model, engine.tokenizer, prompts, {
      temperature: 1,
      maxTokens: 16,
      seeds,
      ...noEos,
    });
    for (const [i, p] of prompts.entries()) {
      const [alone] = await generate(engine.model, engine.tokenizer, [p], {
        temperature: 1,
        maxTokens: 16,
        seed: seeds[i]!,
        ...noEos,
      });
      expect(batched[i]!.tokenIds).toEqual(alone!.tokenIds);
    }
    const reversed = await generate(engine.model, engine.tokenizer, [...prompts].reverse(), {
      temperature: 1,
      maxTokens: 16,
      seeds: [...seeds].reverse(),
      ...noEos,
    });
    expect(reversed.reverse().map((r) => r.tokenIds)).toEqual(batched.map((r) => r.tokenIds));
    await expect(generate(engine.model, engine.tokenizer, prompts, { temperature: 1, seeds: [1] })).rejects.toThrow(
      /1 seeds for 4 prompts/,
    );
  });

  it('runs a prompt asked for by several rows once, and each row samples as it would alone', async () => {
    // A state's candidates: one prompt many times, beside another (trainer/actor.ts pairsForState).
    const batch = [prompts[1]!, prompts[1]!, prompts[0]!, prompts[1]!];
    const seeds = [3, 4, 5, 6];
    const batched = await generate(engine.model, engine.tokenizer, batch, {
      temperature: 1,
      maxTokens: 12,
      seeds,
      ...noEos,
    });
    for (const [i, p] of batch.entries()) {
      const [alone] = await generate(engine.model, engine.tokenizer, [p], {
        temperature: 1,
        maxTokens: 12,
        seed: seeds[i]!,
        ...noEos,
      });
      expect(batched[i]!.tokenIds).toEqual(alone!.tokenIds);
      for (const [j, lp] of alone!.tokenLogprobs.entries()) expect(batched[i]!.tokenLogprobs[j]).toBeCloseTo(lp, 4);
    }
    expect(new Set(batched.map((r) => r.tokenIds.join(','))).size).toBeGreaterThan(1);
  });

  it('stops at a stop string, cutting the text before it', async () => {
    const [full] = await generate(engine.model, engine.tokenizer, [prompts[0]!], {
      temperature: 0,
      maxTokens: 40,
      ...noEos,
    });
    // A stop string taken from the middle of the unconstrained output (clean characters only).
    let stop = '';
    for (let k = 5; k < 30 && !stop; k++) {
      const piece = engine.tokenizer.decode(full!.tokenIds.slice(k, k + 2));
      if (piece.trim().length >= 2 && !piece.includes('\uFFFD')) stop = piece;
    }
    expect(stop).not.toBe('');
    const [cut] = await generate(engine.model, engine.tokenizer, [prompts[0]!], {
      temperature: 0,
      maxTokens: 40,
      stop: ['never-produced-xyz', stop],
      ...noEos,
    });
    expect(cut!.finishReason).toBe('stop');
    expect(cut!.stopString).toBe(stop);
    expect(cut!.text).toBe(full!.text.slice(0, full!.text.indexOf(stop)));
    expect(full!.tokenIds.slice(0, cut!.tokenIds.length)).toEqual(cut!.tokenIds);
    expect(engine.tokenizer.decode(cut!.tokenIds)).toContain(stop);
    expect(engine.tokenizer.decode(cut!.tokenIds.slice(0, -1))).not.toContain(stop);
  });

  it('ends a row at an end-of-sequence token, and others go on', async () => {
    const greedy = await generate(engine.model, engine.tokenizer, prompts.slice(0, 2), {
      temperature: 0,
      maxTokens: 30,
      ...noEos,
    });
    const eos = greedy[0]!.tokenIds[6]!;
    const firstAt = greedy[0]!.tokenIds.indexOf(eos);
    const res = await generate(engine.model, engine.tokenizer, prompts.slice(0, 2), {
      temperature: 0,
      maxTokens: 30,
      eosTokenIds: [eos],
    });
    expect(res[0]!.finishReason).toBe('eos');
    expect(res[0]!.tokenIds).toEqual(greedy[0]!.tokenIds.slice(0, firstAt + 1));
    expect(res[0]!.text).toBe(engine.tokenizer.decode(greedy[0]!.tokenIds.slice(0, firstAt)));
    const other = greedy[1]!.tokenIds.indexOf(eos);
    expect(res[1]!.tokenIds).toEqual(other < 0 ? greedy[1]!.tokenIds : greedy[1]!.tokenIds.slice(0, other + 1));
  });

  it('never samples ids past the tokenizer when the embedding is padded', async () => {
    const cfg = { ...engine.model.config, vocabSize: engine.tokenizer.vocabSize + 64 };
    const padded = new Decoder(cfg, { name: 'padded', seed: 9, initStd: 0.3 });
    try {
      const res = await generate(padded, engine.tokenizer, prompts, {
        temperature: 5,
        maxTokens: 60,
        seed: 2,
        ...noEos,
      });
      const ids = res.flatMap((r) => r.tokenIds);
      expect(ids).toHaveLength(prompts.length * 60);
      expect(Math.max(...ids)).toBeLessThan(engine.tokenizer.vocabSize);
    } finally {
      padded.dispose();
    }
  });

  it('rejects bad requests clearly', async () => {
    await expect(generate(engine.model, engine.tokenizer, [[]])).rejects.toThrow(/prompt 0 is empty/);
    await expect(generate(engine.model, engine.tokenizer, [[1, 1e6]])).rejects.toThrow(/outside/);
    await expect(generate(engine.model, engine.tokenizer, [[1]], { topP: 0 })).rejects.toThrow(/topP/);
    await expect(generate(engine.model, engine.tokenizer, [[1]], { maxTokens: 0 })).rejects.toThrow(/maxTokens/);
    const tooLong = new Array(engine.model.config.maxPositionEmbeddings).fill(1);
    await expect(generate(engine.model, engine.tokenizer, [tooLong])).rejects.toThrow(/context/);
  });

  it('leaks no tensors', async () => {
    const before = tf.memory().numTensors;
    await generate(engine.model, engine.tokenizer, prompts, { temperature: 0.8, topP: 0.9, maxTokens: 10, seed: 1 });
    await completionLogprobValues(engine.model, [{ prompt: prompts[0]!, completion: prompts[1]! }]);
    expect(tf.memory().numTensors).toBe(before);
  });
});

describe('sampling', () => {
  it('follows the distribution at temperature 1 and sharpens it below', () => {
    const p = [0.5, 0.3, 0.15, 0.05];
    const logp = Float64Array.from(p, Math.log);
    const rand = seededRandom(99);
    const counts = [0, 0, 0, 0];
    const N = 20000;
    for (let i = 0; i < N; i++) counts[sampleToken(logp, 1, 1, rand)]!++;
    for (let k = 0; k < 4; k++) expect(Math.abs(counts[k]! / N - p[k]!)).toBeLessThan(0.015);
    // top-p 0.6 keeps {0.5, 0.3}: renormalised 0.625 / 0.375, never the tail.
    const nucleus = [0, 0, 0, 0];
    for (let i = 0; i < N; i++) nucleus[sampleToken(logp, 1, 0.6, rand)]!++;
    expect(nucleus[2]! + nucleus[3]!).toBe(0);
    expect(Math.abs(nucleus[0]! / N - 0.625)).toBeLessThan(0.015);
    expect(sampleToken(logp, 0, 1, rand)).toBe(0);
    const cold = [0, 0, 0, 0];
    for (let i = 0; i < 2000; i++) cold[sampleToken(logp, 0.05, 1, rand)]!++;
    expect(cold[0]).toBeGreaterThan(1990);
  });

  it("draws the same token from a distribution handed over sorted (llama.cpp's) as from one it sorts itself", () => {
    const rand = seededRandom(5);
    for (let trial = 0; trial < 40; trial++) {
      const V = 64;
      // Probabilities on a coarse grid, so that many are tied.
      const weights = Array.from({ length: V }, () => 1 + Math.floor(rand() * 6));
      const total = weights.reduce((a, b) => a + b, 0);
      const probs = weights.map((w) => w / total);
      // Descending, ties in a shuffled order, as a sort that is not stable leaves them.
      const handed = probs.map((p, id) => [id, p] as const);
      for (let i = V - 1; i > 0; i--) {
        const j = Math.floor(rand() * (i + 1));
        [handed[i], handed[j]] = [handed[j]!, handed[i]!];
      }
      handed.sort((a, b) => b[1] - a[1]);
      const order = descendingOrder(handed, V);
      expect(order).toBeDefined();
      const logp = Float64Array.from(probs, Math.log);
      for (const [temperature, topP] of [
        [1, 0.5],
        [0.7, 0.95],
        [1.3, 0.3],
      ] as const) {
        const seed = 1000 * trial + Math.round(100 * topP);
        const a = seededRandom(seed);
        const b = seededRandom(seed);
        for (let i = 0; i < 20; i++)
          expect(sampleToken(logp, temperature, topP, b, order)).toBe(sampleToken(logp, temperature, topP, a));
      }
    }
  });

  it('takes no order from a distribution that is not sorted or does not cover the vocabulary', () => {
    expect(
      descendingOrder(
        [
          [0, 0.2],
          [1, 0.5],
          [2, 0.3],
        ],
        3,
      ),
    ).toBeUndefined();
    expect(
      descendingOrder(
        [
          [1, 0.5],
          [2, 0.5],
        ],
        3,
      ),
    ).toBeUndefined();
    expect(
      descendingOrder(
        [
          [1, 0.5],
          [1, 0.5],
          [0, 0],
        ],
        3,
      ),
    ).toBeUndefined();
    // Ids at or above the vocabulary (padded embedding rows) are left out; ties go by id.
    expect(
      descendingOrder(
        [
          [3, 0.6],
          [2, 0.2],
          [0, 0.1],
          [1, 0.1],
        ],
        3,
      ),
    ).toEqual([2, 0, 1]);
    expect(() => sampleToken(Float64Array.from([0.5, 0.5], Math.log), 1, 0.9, seededRandom(1), [0])).toThrow(
      /order has 1 ids/,
    );
  });
});

describe('log-probabilities of continuations', () => {
  it('match the probabilities generation sampled from (temperature 1)', async () => {
    const gen = await generate(engine.model, engine.tokenizer, prompts, {
      temperature: 1,
      maxTokens: 12,
      seed: 4,
      ...noEos,
    });
    const scored = await completionLogprobValues(
      engine.model,
      prompts.map((p, i) => ({ prompt: p, completion: gen[i]!.tokenIds })),
      {
        padTokenId: engine.tokenizer.padTokenId,
      },
    );
    for (const [i, r] of gen.entries()) {
      expect(scored[i]).toHaveLength(r.tokenIds.length);
      for (const [j, lp] of r.tokenLogprobs.entries()) expect(Math.abs(scored[i]![j]! - lp)).toBeLessThan(1e-4);
      const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
      expect(Math.abs(sum(scored[i]!) - sum(r.tokenLogprobs))).toBeLessThan(1e-3);
    }
  });

  it('are the same batched (with padding) as one by one', async () => {
    const items = [
      { prompt: prompts[0]!, completion: prompts[1]! },
      { prompt: prompts[2]!, completion: prompts[3]!.slice(0, 2) },
      { prompt: prompts[1]!, completion: [] },
      { prompt: prompts[3]!, completion: prompts[0]! },
    ];
    const batched = await completionLogprobValues(engine.model, items, { batchSize: 4 });
    for (const [i, it] of items.entries()) {
      const [alone] = await completionLogprobValues(engine.model, [it]);
      expect(batched[i]).toHaveLength(it.completion.length);
      for (const [j, v] of alone!.entries()) expect(Math.abs(batched[i]![j]! - v)).toBeLessThan(1e-5);
    }
  });

  it('run the tokens every row shares once, with the values and gradients of each row alone', () => {
    // A system prompt every row starts with, then rows that differ: the actor's DPO pairs (trainer/actor.ts).
    const shared = engine.tokenizer.encode('You are a programming assistant helping a person who needs one function. ');
    const items = [
      { prompt: [...shared, ...prompts[0]!], completion: prompts[1]! },
      { prompt: [...shared, ...prompts[2]!], completion: prompts[3]!.slice(0, 2) },
      { prompt: [...shared, ...prompts[3]!], completion: prompts[0]! },
    ];
    expect(sharedPrefix(items)).toBe(shared.length);
    expect(sharedPrefix([items[0]!])).toBe(0);
    // Never the last prompt token: its logits predict the first completion token.
    expect(sharedPrefix([items[0]!, items[0]!])).toBe(items[0]!.prompt.length - 1);
    const model = trainable;
    const w = model.param('model.layers.0.self_attn.k_proj.weight');
    const run = (batch: typeof items) => {
      const { value, grads } = tf.variableGrads(() => tf.sum(completionLogprobs(model, batch).sums) as tf.Scalar, [w]);
      const out = { value: value.dataSync()[0]!, grad: Array.from(grads[w.name]!.dataSync()) };
      tf.dispose([value, grads[w.name]!]);
      return out;
    };
    const together = run(items);
    const alone = items.map((it) => run([it]));
    expect(together.value).toBeCloseTo(
      alone.reduce((s, a) => s + a.value, 0),
      3,
    );
    const summed = together.grad.map((_, i) => alone.reduce((s, a) => s + a.grad[i]!, 0));
    const scale = Math.max(...summed.map(Math.abs));
    expect(scale).toBeGreaterThan(0);
    for (const [i, g] of together.grad.entries()) expect(Math.abs(g - summed[i]!)).toBeLessThan(1e-4 * scale);
    const r = completionLogprobs(model, items);
    const lp = r.tokenLogprobs.arraySync();
    for (const [b, it] of items.entries()) {
      const one = completionLogprobs(model, [it]);
      const ref = one.tokenLogprobs.arraySync()[0]!;
      for (const [j, v] of ref.entries()) expect(Math.abs(lp[b]![j]! - v)).toBeLessThan(1e-5);
      tf.dispose([one.tokenLogprobs, one.mask, one.sums]);
    }
    tf.dispose([r.tokenLogprobs, r.mask, r.sums]);
  });

  it('are differentiable, with padding contributing nothing', () => {
    const items = [
      { prompt: prompts[0]!, completion: prompts[1]! },
      { prompt: prompts[2]!, completion: prompts[0]!.slice(0, 1) },
    ];
    const model = trainable;
    const w = model.param('model.layers.0.mlp.up_proj.weight');
    const objective = () => tf.sum(completionLogprobs(model, items).sums) as tf.Scalar;
    const { value, grads } = tf.variableGrads(objective, [w]);
    const g = grads[w.name]!;
    const norm = tf.norm(g).dataSync()[0]!;
    const f0 = value.dataSync()[0]!;
    expect(Number.isFinite(f0)).toBe(true);
    expect(norm).toBeGreaterThan(0);
    // A small step along the gradient raises the objective by about eps·|g| (first-order check).
    const eps = 1e-2;
    const saved = w.clone();
    w.assign(tf.tidy(() => tf.add(saved, tf.mul(g, eps / norm))));
    const f1 = tf.tidy(() => objective().dataSync()[0]!);
    w.assign(saved);
    saved.dispose();
    expect((f1 - f0) / (eps * norm)).toBeGreaterThan(0.8);
    expect((f1 - f0) / (eps * norm)).toBeLessThan(1.2);
    const r = completionLogprobs(model, items);
    expect(r.lengths).toEqual([prompts[1]!.length, 1]);
    const lp = r.tokenLogprobs.arraySync();
    const mask = r.mask.arraySync();
    expect(lp[1]!.slice(1).every((v) => v === 0)).toBe(true);
    expect(mask[1]!.reduce((a, b) => a + b, 0)).toBe(1);
    expect(r.sums.arraySync()[1]).toBeCloseTo(lp[1]![0]!, 5);
    tf.dispose([value, g, r.tokenLogprobs, r.mask, r.sums]);
  });
});
