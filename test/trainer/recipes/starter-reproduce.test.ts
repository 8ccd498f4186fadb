// `sweetloop model starter --verify` on a recipe small enough for a test: a starter rebuilt from the recipe its
// manifest records is byte-identical, and a starter whose weights were touched afterwards is caught.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../trainer/model/backend.ts';
import { ensureStarterPolicy } from '../../../trainer/recipes/starter.ts';
import { reproduceStarter } from '../../../trainer/recipes/starter-reproduce.ts';

let root: string;

beforeAll(async () => {
  await initBackend();
  root = await mkdtemp(join(tmpdir(), 'starter-reproduce-'));
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe('reproduceStarter', () => {
  it('rebuilds a starter identically from its manifest, and names the file that was changed since', async () => {
    const original = join(root, 'original');
    await ensureStarterPolicy({
      dir: original,
      seed: 11,
      games: 5,
      steps: 4,
      tokensPerStep: 512,
      size: {
        vocabSize: 600,
        hiddenSize: 32,
        intermediateSize: 64,
        numLayers: 1,
        numHeads: 4,
        numKvHeads: 2,
        contextLength: 512,
      },
      copyDrillPhase: { steps: 3, peakLr: 1e-3, drills: 12 },
    });
    const same = await reproduceStarter({ from: original, scratchDir: join(root, 'rebuilt') });
    expect(same.differences).toEqual([]);
    expect(Object.keys(same.sha256.original)).toEqual([
      'config.json',
      'model.safetensors',
      'starter.json',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    expect(same.report.recipe).toMatchObject({
      seed: 11,
      games: 5,
      steps: 4,
      variedTasks: 0.5,
      copyDrills: 0.5,
      copyDrillPhase: { steps: 3, peakLr: 1e-3, drills: 12 },
    });

    // One weight nudged after the build (the manifest left as it was): the rebuild no longer matches it.
    const weights = join(original, 'model.safetensors');
    const bytes = await readFile(weights);
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 0x01, bytes.length - 1);
    await writeFile(weights, bytes);
    const changed = await reproduceStarter({ from: original, scratchDir: join(root, 'rebuilt') });
    expect(changed.differences).toEqual(['model.safetensors']);
  });
});
