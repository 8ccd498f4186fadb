// The streamed text of a completion (trainer/serve/completion-text.ts), decoded by a tiny checkpoint's byte-level
// tokenizer (testing/tiny-checkpoint.ts): whole characters only, stop strings never streamed.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../../../testing/tiny-checkpoint.ts';
import { TextTokenizer } from '../../../trainer/model/tokenizer.ts';
import { CompletionText } from '../../../trainer/serve/completion-text.ts';

let work: string;
let ckpt: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'sweetloop-completion-text-'));
  ckpt = await makeTinyCheckpoint({ dir: join(work, 'ckpt') });
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('CompletionText', () => {
  it('streams whole characters only, and never a piece of a stop string', async () => {
    const tok = await TextTokenizer.load(ckpt);
    const text = 'return [v → v*2] END of it';
    const ids = tok.encode(text);
    // The arrow is three bytes the tiny tokenizer never merged: split over several tokens.
    expect(ids.length).toBeGreaterThan(tok.encode('return [v  v*2] END of it').length);
    const plain = new CompletionText((x) => tok.decode(x), []);
    const pieces = ids.map((id) => plain.push(id).text);
    pieces.push(plain.flush());
    expect(pieces.join('')).toBe(text);
    expect(pieces.some((p) => p.includes('\uFFFD'))).toBe(false);
    const stopping = new CompletionText((x) => tok.decode(x), ['END', 'never']);
    const out: string[] = [];
    let stopped = false;
    for (const id of ids) {
      const r = stopping.push(id);
      out.push(r.text);
      if ((stopped = r.stopped)) break;
    }
    expect(stopped).toBe(true);
    expect(out.join('')).toBe('return [v → v*2] ');
    expect(out.some((p) => p.includes('E'))).toBe(false);
  });
});
