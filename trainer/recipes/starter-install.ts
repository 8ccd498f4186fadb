// Reusing a starter instead of training it (trainer/recipes/starter.ts): a directory already holding the recipe
// asked for, or the build the repository ships, each checked against its manifest's sha256 before use.
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkpointSha256 } from '../model/checkpoint.ts';
import { buildStarterPolicy, checkStarterDir, sha256File } from './starter-build.ts';
import {
  recipeOf,
  STARTER_MANIFEST,
  STARTER_RECIPE_VERSION,
  type StarterOptions,
  type StarterRecipe,
  type StarterReport,
} from './starter-recipe.ts';

export interface EnsureResult {
  /** True when nothing was trained: the directory already held the starter, or the shipped copy was installed. */
  reused: boolean;
  /** True when the shipped copy was installed. */
  shipped?: boolean;
  sha256: string;
  numParameters: number;
  report?: StarterReport;
}

/**
 * Reuses the starter in options.dir when its manifest names the same recipe and every file still has the
 * sha256 recorded at build time; otherwise (missing, other recipe, a changed or truncated file) builds it.
 */
export async function ensureStarterPolicy(options: StarterOptions): Promise<EnsureResult> {
  const recipe = recipeOf(options);
  if (!options.force && !options.dialogues) {
    const reason = await verifyStarter(options.dir, recipe);
    if (reason === null) {
      const manifest = JSON.parse(await readFile(join(options.dir, STARTER_MANIFEST), 'utf8')) as {
        numParameters: number;
      };
      return { reused: true, sha256: await checkpointSha256(options.dir), numParameters: manifest.numParameters };
    }
    const shippedDir = shippedStarterDir(recipe.seed);
    if (options.shipped !== false && (await verifyStarter(shippedDir, recipe)) === null) {
      const numParameters = await installStarter(shippedDir, options.dir);
      options.log?.(
        `starter: installed the shipped starter (recipe ${STARTER_RECIPE_VERSION}, seed ${recipe.seed}) into ${options.dir}`,
      );
      return { reused: true, shipped: true, sha256: await checkpointSha256(options.dir), numParameters };
    }
    options.log?.(`starter: building (${reason})`);
  }
  const report = await buildStarterPolicy(options);
  return { reused: false, sha256: await checkpointSha256(options.dir), numParameters: report.numParameters, report };
}

/** Where the repository ships the standard recipe's build for a seed (it may ship none for that seed). */
export function shippedStarterDir(seed: number): string {
  return join(dirname(fileURLToPath(import.meta.url)), 'starter-checkpoint', `seed-${seed}`);
}

/**
 * Copies a verified starter (its manifest and the files it lists, nothing else) into dir, replacing the
 * starter there; refuses a directory holding anything else. Copied beside dir and renamed into place, so an
 * interrupted copy never looks like a starter. Returns the starter's parameter count.
 */
async function installStarter(from: string, dir: string): Promise<number> {
  await checkStarterDir(dir);
  const manifest = JSON.parse(await readFile(join(from, STARTER_MANIFEST), 'utf8')) as {
    numParameters: number;
    files: Record<string, string>;
  };
  const staging = `${dir}.tmp-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  for (const f of [...Object.keys(manifest.files), STARTER_MANIFEST]) await copyFile(join(from, f), join(staging, f));
  await rm(dir, { recursive: true, force: true });
  await rename(staging, dir);
  return manifest.numParameters;
}

/** null when dir holds a valid starter of this recipe, else why not. */
export async function verifyStarter(dir: string, recipe: StarterRecipe): Promise<string | null> {
  const manifestPath = join(dir, STARTER_MANIFEST);
  if (!existsSync(manifestPath)) return `no starter policy at ${dir}`;
  let manifest: { recipeVersion?: number; recipe?: StarterRecipe; files?: Record<string, string> };
  try {
    manifest = JSON.parse(await readFile(manifestPath, 'utf8'));
  } catch {
    return `${manifestPath} is unreadable`;
  }
  if (manifest.recipeVersion !== STARTER_RECIPE_VERSION || JSON.stringify(manifest.recipe) !== JSON.stringify(recipe)) {
    return 'the existing starter was built with another recipe or seed';
  }
  for (const [file, sha] of Object.entries(manifest.files ?? {})) {
    const p = join(dir, file);
    if (!existsSync(p)) return `${file} is missing`;
    if ((await sha256File(p)) !== sha) return `${file} does not match its recorded sha256`;
  }
  if (!manifest.files || Object.keys(manifest.files).length < 4) return 'the manifest lists no files';
  return null;
}
