// Policy versions as the trainer names them: a PolicyVersion name, `deployed` (the version serving people) or
// `starter` (the built-in starter policy, registered on first use under the same name the bot gives it).
import { copyFile, mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { PolicyVersion, PrismaClient } from '../prisma/generated/client.ts';
import { STARTER_ALGORITHM, checkpointOf, registerVersion, resolvePolicyName } from '../prisma/policy-store.ts';

export interface VersionContext {
  prisma: PrismaClient;
  checkpointRoot: string;
  seed: number;
  log?: (line: string) => void;
}

/** The starter policy's PolicyVersion (building the starter under CHECKPOINT_DIR/starter if needed). */
export async function starterVersion(ctx: VersionContext): Promise<PolicyVersion> {
  const { ensureStarterPolicy, starterVersionName } = await import('./recipes/starter.ts');
  const dir = resolve(join(ctx.checkpointRoot, 'starter'));
  const r = await ensureStarterPolicy({ dir, seed: ctx.seed, progress: 'none', ...(ctx.log ? { log: ctx.log } : {}) });
  const name = starterVersionName(r.sha256);
  return registerVersion(ctx.prisma, {
    name,
    algorithm: STARTER_ALGORITHM,
    checkpointPath: dir,
    checkpointSha256: r.sha256,
    ifExists: 'reuse',
  });
}

/** A version to play or train from (prisma/policy-store.ts resolvePolicyName; `starter` built here if needed), checked playable. */
export async function resolveVersion(ctx: VersionContext, ref: string): Promise<PolicyVersion> {
  const v = await resolvePolicyName(ctx.prisma, ref, { starter: () => starterVersion(ctx) });
  if (v.status === 'removed')
    throw new Error(
      `policy version "${ref}" was removed (sweetloop policy remove): it is kept for the record, not played`,
    );
  if (v.kind === 'checkpoint' && !existsSync(join(checkpointOf(v), 'config.json')))
    throw new Error(`policy version "${ref}": its checkpoint ${v.checkpointPath} is missing`);
  if (v.kind === 'gguf' && !existsSync(checkpointOf(v)))
    throw new Error(`policy version "${ref}": its GGUF file ${v.checkpointPath} is missing`);
  return v;
}

/** Files a model directory carries besides weights and config: copied into every checkpoint derived from it. */
const TOKENIZER_FILES = [
  'tokenizer.json',
  'tokenizer_config.json',
  'generation_config.json',
  'special_tokens_map.json',
];

export async function copyTokenizerFiles(from: string, to: string): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const f of TOKENIZER_FILES) if (existsSync(join(from, f))) await copyFile(join(from, f), join(to, f));
}
