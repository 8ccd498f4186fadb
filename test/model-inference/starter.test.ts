import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../../trainer/model/backend.ts';
import { Engine } from '../../trainer/model/engine.ts';
import { ensureStarterPolicy, expertDialogues } from '../../trainer/model/starter.ts';
import type { StarterOptions } from '../../trainer/model/starter.ts';
import { ANSWER_MARKER, buildDialogue } from '../../tasks/protocol.ts';

let root: string;

beforeAll(async () => {
  await initBackend();
  root = await mkdtemp(join(tmpdir(), 'starter-'));
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

// The real recipe (expert games on ColBench-mini, BPE, SFT on assistant tokens, HF directory) on a tiny budget.
function tinyOptions(dir: string): StarterOptions {
  return {
    dir,
    seed: 7,
    games: 6,
    steps: 8,
    tokensPerStep: 512,
    size: { vocabSize: 600, hiddenSize: 32, intermediateSize: 64, numLayers: 1, numHeads: 4, numKvHeads: 2, contextLength: 512 },
  };
}

describe('starter policy', () => {
  it('trains on expert dialogues that end with an answer', async () => {
    const dialogues = await expertDialogues(7, 4);
    expect(dialogues).toHaveLength(4);
    for (const d of dialogues) {
      expect(d[0]!.role).toBe('system');
      expect(d.at(-1)!.role).toBe('assistant');
      expect(d.at(-1)!.content).toContain(ANSWER_MARKER);
    }
  });

  it('builds a loadable checkpoint whose loss went down, reuses it, and rebuilds it identically when damaged', async () => {
    const dir = join(root, 'starter');
    const lines: string[] = [];
    const built = await ensureStarterPolicy({ ...tinyOptions(dir), progress: 'lines', log: (l) => lines.push(l) });
    expect(built.reused).toBe(false);
    const report = built.report!;
    expect(report.losses).toHaveLength(8);
    expect(report.finalLoss).toBeLessThan(report.initialLoss);
    expect(lines.some((l) => l.includes('update 8/8'))).toBe(true);

    const engine = await Engine.load(dir);
    try {
      expect(engine.info().chatTemplate).toBe('model');
      expect(engine.model.numParameters).toBe(built.numParameters);
      const dialogue = buildDialogue({ kind: 'backend', description: 'I need a function. The signature of the function is: def f(x):' }, []);
      const [r] = await engine.generate([{ messages: dialogue }], { maxTokens: 8, temperature: 0 });
      expect(r!.tokenIds.length).toBeGreaterThan(0);
    } finally {
      engine.dispose();
    }

    const again = await ensureStarterPolicy(tinyOptions(dir));
    expect(again).toMatchObject({ reused: true, sha256: built.sha256 });

    // A damaged file is detected by its recorded sha256; the rebuild is bit-identical (same seed, same backend).
    const cfgPath = join(dir, 'tokenizer_config.json');
    await appendFile(cfgPath, ' ');
    const rebuilt = await ensureStarterPolicy(tinyOptions(dir));
    expect(rebuilt.reused).toBe(false);
    expect(rebuilt.sha256).toBe(built.sha256);
    expect(JSON.parse(await readFile(cfgPath, 'utf8')).chat_template).toContain('<|im_start|>');

    // A directory that is not a starter is never overwritten.
    const foreign = join(root, 'foreign');
    await mkdir(foreign);
    await writeFile(join(foreign, 'notes.txt'), 'keep me');
    await expect(ensureStarterPolicy(tinyOptions(foreign))).rejects.toThrow(/refusing to overwrite/);
    expect(await readFile(join(foreign, 'notes.txt'), 'utf8')).toBe('keep me');

    // Another seed is another recipe: rebuilt, different weights.
    const other = await ensureStarterPolicy({ ...tinyOptions(dir), seed: 8, steps: 1 });
    expect(other.reused).toBe(false);
    expect(other.sha256).not.toBe(built.sha256);
  });
});
