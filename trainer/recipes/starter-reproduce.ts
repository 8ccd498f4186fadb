// Checks that a starter directory (above all the one the repository ships) is what the recipe builds: trains
// the recipe its manifest records into a scratch directory and compares the two, file by file. The full recipe
// takes minutes of CPU, so this runs on demand (`sweetloop model starter --verify`); the tests rebuild a short
// version of the recipe instead, and check this comparison on a tiny recipe.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  STARTER_MANIFEST,
  ensureStarterPolicy,
  type StarterOptions,
  type StarterRecipe,
  type StarterReport,
} from './starter.ts';

export interface Reproduction {
  /** Files whose bytes differ between the two directories, or that one of them lacks (empty: identical). */
  differences: string[];
  sha256: { original: Record<string, string>; rebuilt: Record<string, string> };
  report: StarterReport;
}

async function fileHashes(dir: string): Promise<Record<string, string>> {
  const manifest = JSON.parse(await readFile(join(dir, STARTER_MANIFEST), 'utf8')) as {
    files?: Record<string, string>;
  };
  const out: Record<string, string> = {};
  for (const f of [...Object.keys(manifest.files ?? {}), STARTER_MANIFEST].sort()) {
    out[f] = existsSync(join(dir, f))
      ? createHash('sha256')
          .update(await readFile(join(dir, f)))
          .digest('hex')
      : 'missing';
  }
  return out;
}

/** Rebuilds the starter in `from` with the recipe its manifest records, into `scratchDir` (replaced), and compares. */
export async function reproduceStarter(
  options: { from: string; scratchDir: string } & Pick<StarterOptions, 'progress' | 'log'>,
): Promise<Reproduction> {
  const manifestPath = join(options.from, STARTER_MANIFEST);
  if (!existsSync(manifestPath)) throw new Error(`${options.from} holds no starter policy (no ${STARTER_MANIFEST})`);
  const { recipe } = JSON.parse(await readFile(manifestPath, 'utf8')) as { recipe: StarterRecipe };
  const original = await fileHashes(options.from);
  const r = await ensureStarterPolicy({
    dir: options.scratchDir,
    seed: recipe.seed,
    steps: recipe.steps,
    games: recipe.games,
    tokensPerStep: recipe.tokensPerStep,
    peakLr: recipe.peakLr,
    size: recipe.size,
    ...(recipe.demonstrators ? { demonstrators: recipe.demonstrators } : {}),
    // Absent from a manifest means none, not the current defaults.
    variedTasks: recipe.variedTasks ?? 0,
    copyDrills: recipe.copyDrills ?? 0,
    copyDrillPhase: recipe.copyDrillPhase ?? null,
    force: true,
    shipped: false,
    ...(options.progress ? { progress: options.progress } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
  const rebuilt = await fileHashes(options.scratchDir);
  const names = [...new Set([...Object.keys(original), ...Object.keys(rebuilt)])].sort();
  return {
    differences: names.filter((n) => original[n] !== rebuilt[n]),
    sha256: { original, rebuilt },
    report: r.report!,
  };
}
