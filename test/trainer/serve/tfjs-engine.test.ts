// The tfjs engine's per-token text (tokenPieces): what the worker decoded as a whole, split over its tokens
// with multi-byte characters kept whole; and the serial engine's queue, cancellation and close.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../../../testing/tiny-checkpoint.ts';
import { TextTokenizer } from '../../../trainer/model/tokenizer.ts';
import { EngineOverloadedError, type EngineRequest } from '../../../trainer/serve/engine-contract.ts';
import { TfjsEngine, tokenPieces } from '../../../trainer/serve/tfjs-engine.ts';

let dir: string;
let tok: TextTokenizer;

beforeAll(async () => {
  dir = await makeTinyCheckpoint();
  tok = await TextTokenizer.load(dir);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('tokenPieces', () => {
  const decode = (ids: readonly number[]) => tok.decode(ids);

  it('splits a text over its tokens, a character split across byte tokens going whole to its last token', () => {
    const text = 'héllo 😀 wörld, return 0';
    const ids = tok.encode(text);
    const pieces = tokenPieces(decode, ids, text);
    expect(pieces).toHaveLength(ids.length);
    expect(pieces.join('')).toBe(text);
    expect(pieces.some((p) => p.includes('😀'))).toBe(true);
    for (const p of pieces) expect(p).not.toContain('\uFFFD');
  });

  it('leaves out what the worker cut: the EOS token and the rest of a stop string', () => {
    const eos = tok.eosTokenIds[0]!;
    const text = 'return 0';
    expect(tokenPieces(decode, [...tok.encode(text), eos], text).join('')).toBe(text);
    const full = 'return 0\nI WANT TO ANSWER: x';
    const cut = full.slice(0, full.indexOf('\nI WANT'));
    const pieces = tokenPieces(decode, tok.encode(full), cut);
    expect(pieces.join('')).toBe(cut);
  });
});

describe('TfjsEngine', () => {
  const req = (over: Partial<EngineRequest> = {}): EngineRequest => ({
    messages: [{ role: 'user', content: 'What should the function return?' }],
    maxTokens: 8,
    temperature: 0,
    topP: 1,
    logprobs: true,
    topLogprobs: 0,
    adapter: null,
    signal: new AbortController().signal,
    ...over,
  });

  it('runs one request at a time, queues up to maxQueue, refuses beyond, drops a cancelled waiting request', async () => {
    const engine = await TfjsEngine.start({ modelName: 'tiny', checkpointDir: dir, maxBatch: 4, maxQueue: 2 });
    try {
      const a = engine.generate(req());
      const waiting = new AbortController();
      const b = engine.generate(req({ signal: waiting.signal }));
      const c = engine.generate(req({ seed: 2, temperature: 1 }));
      expect(engine.stats()).toMatchObject({ running: 1, queued: 2, maxBatch: 1, maxQueue: 2 });
      expect(() => engine.generate(req())).toThrow(EngineOverloadedError);
      waiting.abort();
      expect(engine.stats().queued).toBe(1);
      expect(await b.result).toMatchObject({ finishReason: 'abort', completionTokens: 0 });
      const tokens = [];
      for await (const t of a) tokens.push(t);
      const ra = await a.result;
      expect(ra.completionTokens).toBeGreaterThan(0);
      expect(tokens.every((t) => typeof t.logprob === 'number' && t.logprob <= 0)).toBe(true);
      expect((await c.result).completionTokens).toBeGreaterThan(0);
      expect(engine.stats()).toMatchObject({ running: 0, queued: 0 });
    } finally {
      await engine.close();
    }
    expect(() => engine.generate(req())).toThrow(/closed/);
  });
});
