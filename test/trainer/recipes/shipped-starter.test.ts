// The starter shipped in the repository (trainer/recipes/starter-checkpoint/seed-1234) must be what the recipe
// builds. Rebuilding it in full takes minutes of CPU (`npx sweetloop model starter --verify` does that), so
// this test rebuilds a short version with the same code, games, drills, tokenizer and model shape (2 + 2
// updates instead of the recipe's 3,000 on drills and 1,200 on games) and checks that everything but the trained values agrees; then that the shipped files
// are intact and of the current recipe, that `npm start`'s path installs them instead of training, and that
// their weights are trained ones.
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../trainer/model/backend.ts';
import { checkpointSha256 } from '../../../trainer/model/checkpoint.ts';
import { LoadedPolicy } from '../../../trainer/model/loaded-policy.ts';
import { openSafetensors } from '../../../trainer/model/safetensors.ts';
import {
  DEFAULT_RECIPE,
  STARTER_MANIFEST,
  STARTER_RECIPE_VERSION,
  ensureStarterPolicy,
  expertDialogues,
  recipeOf,
  shippedStarterDir,
  verifyStarter,
} from '../../../trainer/recipes/starter.ts';

const SEED = 1234; // SEED's default in bin/config.ts: what a fresh clone's `npm start` asks for
const shipped = shippedStarterDir(SEED);
const REBUILD = `npx sweetloop model starter --seed ${SEED} --out trainer/recipes/starter-checkpoint/seed-${SEED} --force`;

let root: string;
let short: string;

beforeAll(async () => {
  await initBackend();
  root = await mkdtemp(join(tmpdir(), 'shipped-starter-'));
  short = join(root, 'short');
  // The drill phase shortened too: the drills themselves (and so the tokenizer) do not depend on its length.
  await ensureStarterPolicy({
    dir: short,
    seed: SEED,
    steps: 2,
    copyDrillPhase: { ...DEFAULT_RECIPE.copyDrillPhase!, steps: 2 },
    shipped: false,
  });
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

const text = (dir: string, file: string) => readFile(join(dir, file), 'utf8');

async function tensorLayout(dir: string): Promise<Record<string, string>> {
  const f = await openSafetensors(join(dir, 'model.safetensors'));
  try {
    return Object.fromEntries([...f.entries].map(([name, e]) => [name, `${e.dtype}[${e.shape.join(',')}]`]));
  } finally {
    await f.close();
  }
}

describe('the shipped starter policy', () => {
  it('is intact, of the current recipe, and its README states its sha256', async () => {
    const reason = await verifyStarter(shipped, recipeOf({ seed: SEED }));
    expect(
      reason,
      `the shipped starter no longer fits the recipe (${reason}): rebuild it with \`${REBUILD}\``,
    ).toBeNull();
    const manifest = JSON.parse(await text(shipped, STARTER_MANIFEST)) as {
      recipeVersion: number;
      recipe: { seed: number; steps: number };
    };
    expect(manifest.recipeVersion).toBe(STARTER_RECIPE_VERSION);
    expect(manifest.recipe).toMatchObject({ seed: SEED, steps: DEFAULT_RECIPE.steps });
    expect(await text(join(shipped, '..'), 'README.md')).toContain(await checkpointSha256(shipped));
  });

  it('matches a short rebuild by the same code: tokenizer, config, tensor names and shapes, training data', async () => {
    for (const file of ['tokenizer.json', 'tokenizer_config.json', 'config.json']) {
      expect(
        await text(short, file),
        `${file} differs from what the recipe builds now: rebuild with \`${REBUILD}\``,
      ).toBe(await text(shipped, file));
    }
    expect(await tensorLayout(shipped)).toEqual(await tensorLayout(short));
    const facts = async (dir: string) => {
      const m = JSON.parse(await text(dir, STARTER_MANIFEST)) as Record<string, unknown> & {
        recipe: Record<string, unknown>;
      };
      const phase = m.recipe.copyDrillPhase as Record<string, unknown> | undefined;
      const recipe = { ...m.recipe, steps: undefined, copyDrillPhase: phase && { ...phase, steps: undefined } };
      return {
        recipeVersion: m.recipeVersion,
        recipe,
        numParameters: m.numParameters,
        trainTokens: m.trainTokens,
        trainDialogues: m.trainDialogues,
      };
    };
    expect(await facts(shipped)).toEqual(await facts(short));
  });

  it('is installed instead of trained, loads, and its weights are trained ones', async () => {
    const dir = join(root, 'checkpoints', 'starter');
    const lines: string[] = [];
    const r = await ensureStarterPolicy({ dir, seed: SEED, log: (l) => lines.push(l) });
    expect(r).toMatchObject({ reused: true, shipped: true, sha256: await checkpointSha256(shipped) });
    expect(r.report).toBeUndefined();
    expect(lines.join('\n')).toContain('installed the shipped starter');
    expect((await readdir(dir)).sort()).toEqual([
      'config.json',
      'model.safetensors',
      STARTER_MANIFEST,
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    expect(await ensureStarterPolicy({ dir, seed: SEED })).toMatchObject({ reused: true, sha256: r.sha256 });

    // The expert's first message on training tasks, token by token: likely under the shipped weights, barely
    // more than chance after 2 updates.
    const dialogues = await expertDialogues(SEED, 6);
    const items = dialogues.map((d) => {
      const i = d.findIndex((m) => m.role === 'assistant');
      return { prompt: { messages: d.slice(0, i) }, completion: d[i]!.content };
    });
    const meanNll = async (ckpt: string) => {
      const engine = await LoadedPolicy.load(ckpt);
      try {
        const lp = (await engine.logprobs(items)).flat();
        return -lp.reduce((a, b) => a + b, 0) / lp.length;
      } finally {
        engine.dispose();
      }
    };
    const [trained, barely] = [await meanNll(dir), await meanNll(short)];
    const vocab = JSON.parse(await text(shipped, 'config.json')).vocab_size as number;
    expect(barely).toBeGreaterThan(0.5 * Math.log(vocab));
    expect(trained).toBeLessThan(barely / 5);
  });
});
