import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { InferenceClient, InferenceError } from '../../../trainer/model/inference.ts';
import { createPolicyAgent } from '../../../trainer/model/policy.ts';
import { buildDialogue } from '../../../tasks/protocol.ts';
import { makeTinyCheckpoint } from '../../../testing/tiny-checkpoint.ts';

let dirA: string;
let dirB: string;
let client: InferenceClient;

beforeAll(async () => {
  // A wider model for A, so one logprobs request is a long synchronous forward pass in the worker.
  dirA = await makeTinyCheckpoint({ seed: 1, hiddenSize: 128, numLayers: 3, maxPositionEmbeddings: 1024 });
  dirB = await makeTinyCheckpoint({ seed: 2 });
  client = await InferenceClient.start({ checkpointDir: dirA });
});

afterAll(async () => {
  await client?.close();
  for (const d of [dirA, dirB]) if (d) await rm(d, { recursive: true, force: true });
});

describe('inference worker', () => {
  it('runs on another thread and leaves the main event loop free', async () => {
    expect(client.info.threadId).not.toBe(threadId);
    expect(client.info.checkpointDir).toBe(dirA);
    const prompt = { ids: Array.from({ length: 400 }, (_, i) => 3 + (i % 300)) };
    const items = Array.from({ length: 4 }, () => ({
      prompt,
      completion: Array.from({ length: 300 }, (_, i) => 5 + (i % 200)),
    }));
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    // A batch of 4 rows of 700 tokens is one synchronous forward pass: had it run on this thread, no
    // interval callback could fire until it returned.
    const scored = await client.logprobs(items, { batchSize: 4 });
    const during = ticks;
    clearInterval(timer);
    expect(scored).toHaveLength(4);
    expect(scored[0]).toHaveLength(300);
    expect(during).toBeGreaterThan(5);
  });

  it('propagates errors with their message and keeps serving', async () => {
    await expect(client.generate([{ ids: [1, 10_000_000] }])).rejects.toThrow(/outside/);
    await expect(client.generate([{ ids: [1] }], { temperature: -1 })).rejects.toBeInstanceOf(InferenceError);
    const [r] = await client.generate([{ text: 'def scale' }], { maxTokens: 5, temperature: 0 });
    expect(r!.tokenIds).toHaveLength(5);
  });

  it('answers concurrent requests by id', async () => {
    const texts = ['def', 'What', 'It should', 'I WANT'];
    const all = await Promise.all(
      texts.map((t) => client.generate([{ text: t }], { maxTokens: 6, temperature: 0, eosTokenIds: [] })),
    );
    for (const [i, t] of texts.entries()) {
      const [again] = await client.generate([{ text: t }], { maxTokens: 6, temperature: 0, eosTokenIds: [] });
      expect(all[i]![0]!.tokenIds).toEqual(again!.tokenIds);
    }
  });

  it('cancels a generation when the signal aborts', async () => {
    const ac = new AbortController();
    const pending = client.generate([{ text: 'x' }], { maxTokens: 900, eosTokenIds: [] }, ac.signal);
    setTimeout(() => ac.abort(), 30);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    const [r] = await client.generate([{ text: 'x' }], { maxTokens: 3, temperature: 0 });
    expect(r!.tokenIds.length).toBeGreaterThan(0);
  });

  it('hot-swaps the checkpoint, and keeps the old one when the new one fails to load', async () => {
    const probe = [{ prompt: { text: 'def scale(values' }, completion: ', factor' }];
    const before = await client.logprobs(probe);
    await expect(client.reload(join(dirB, 'missing'))).rejects.toThrow(/cannot read/);
    expect(await client.logprobs(probe)).toEqual(before);
    const sizeA = client.info.numParameters;
    const info = await client.reload(dirB);
    expect(info.checkpointDir).toBe(dirB);
    expect(client.info).toEqual(info);
    expect(info.numParameters).toBeLessThan(sizeA);
    const after = await client.logprobs(probe);
    expect(after[0]).not.toEqual(before[0]);
    await client.reload(dirA);
    expect(await client.logprobs(probe)).toEqual(before);
  });

  it('fails to start with a clear error for a bad checkpoint', async () => {
    await expect(InferenceClient.start({ checkpointDir: join(dirA, 'nope') })).rejects.toThrow(
      /cannot read tokenizer\.json/,
    );
  });

  it('closes gracefully: queued work finishes, later requests fail clearly', async () => {
    const c = await InferenceClient.start({ checkpointDir: dirB });
    const queued = c.generate([{ text: 'def' }], { maxTokens: 4, temperature: 0, eosTokenIds: [] });
    await c.close();
    expect((await queued)[0]!.tokenIds).toHaveLength(4);
    await expect(c.generate([{ text: 'def' }])).rejects.toThrow(/closed|not running/);
  });
});

describe('policy agent', () => {
  it('answers a protocol dialogue through the chat template and reports token counts', async () => {
    const agent = await createPolicyAgent({ client, maxTokens: 12, seed: 3, name: 'tiny-policy' });
    const dialogue = buildDialogue(
      { kind: 'backend', description: 'Write a function. The signature of the function is: def f(x):' },
      [],
    );
    const reply = await agent.reply(dialogue);
    const promptIds = await client.encode({ messages: dialogue });
    expect(reply.promptTokens).toBe(promptIds.length);
    expect(reply.completionTokens).toBeGreaterThan(0);
    expect(reply.completionTokens).toBeLessThanOrEqual(12);
    // The same seed and call index give the same reply.
    const again = await createPolicyAgent({ client, maxTokens: 12, seed: 3 });
    expect((await again.reply(dialogue)).text).toBe(reply.text);
    await agent.close(); // shared client: stays open
    expect((await client.generate([{ text: 'a' }], { maxTokens: 1 }))[0]!.tokenIds).toHaveLength(1);
  });
});
