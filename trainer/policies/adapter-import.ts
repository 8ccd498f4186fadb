// `sweetloop policy add NAME --adapter DIR --on ENDPOINT`: a LoRA adapter made anywhere becomes a version
// "adapter NAME on endpoint version ENDPOINT". Everything is checked before anything is written (the name, the
// endpoint version, the directory: adapter-check.ts), then the directory is copied into the adapters directory
// the server loads from (ADAPTERS_DIR) under the version's name, and registered through registerAdapterVersion
// (the trainer's adapters get the same serving reference, serving.ts adapterServing). A refusal
// leaves neither a row nor a copy. Deploying it then loads it like any adapter version (agent-for.ts).
import { cp, rename, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { PolicyVersion, PrismaClient } from '../../prisma/generated/client.ts';
import type { Logger } from '../../tasks/logger.ts';
import { checkpointSha256 } from '../model/checkpoint.ts';
import { AdapterCheckError, checkAdapterDir, type CheckedAdapter } from './adapter-check.ts';
import { assertNewName, registerAdapterVersion, RegistryError } from './registry.ts';
import { servingOf } from './serving.ts';

export interface AdapterImport {
  name: string;
  /** The endpoint version's name. */
  on: string;
  /** The PEFT directory to copy. */
  adapterDir: string;
  /** Where adapters are kept for the server (ADAPTERS_DIR). */
  adaptersDir: string;
  /** The server's largest LoRA rank when the endpoint version records none (VLLM_MAX_LORA_RANK). */
  defaultMaxRank: number;
  actor: string;
  log?: Logger;
}

export async function importAdapterVersion(
  prisma: PrismaClient,
  a: AdapterImport,
): Promise<{ version: PolicyVersion; adapter: CheckedAdapter }> {
  await assertNewName(prisma, a.name);
  const endpoint = await prisma.policyVersion.findUnique({ where: { name: a.on } });
  if (!endpoint) {
    const known = await prisma.policyVersion.findMany({
      where: { kind: 'endpoint', status: { not: 'removed' } },
      select: { name: true },
      orderBy: { createdAt: 'desc' },
      take: 10,
    });
    throw new RegistryError(
      `unknown endpoint version "${a.on}": endpoint versions are ${known.map((k) => k.name).join(', ') || 'none (register one with `sweetloop policy add NAME --endpoint URL --model MODEL`)'}`,
    );
  }
  if (endpoint.kind !== 'endpoint')
    throw new RegistryError(`"${a.on}" is a ${endpoint.kind} version: adapters are served on an endpoint version`);
  if (endpoint.status === 'removed') throw new RegistryError(`"${a.on}" was removed: adapters cannot be added on it`);
  const s = servingOf(endpoint);
  const source = resolve(a.adapterDir);
  let adapter: CheckedAdapter;
  try {
    adapter = await checkAdapterDir(source, {
      baseNames: [s.model, ...(s.baseModelDir ? [s.baseModelDir] : [])],
      maxRank: s.maxLoraRank ?? a.defaultMaxRank,
      endpointName: endpoint.name,
    });
  } catch (err) {
    if (err instanceof AdapterCheckError) throw new RegistryError(`refused ${source}: ${err.message}`);
    throw err;
  }

  const dest = resolve(join(a.adaptersDir, a.name));
  if (
    await stat(dest).then(
      () => true,
      () => false,
    )
  )
    throw new RegistryError(`${dest} exists already: move it away or choose another name`);
  // Copied beside its final place and renamed into it, so a crash never leaves a half-copied adapter there.
  const staging = `${dest}.partial-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  try {
    await cp(source, staging, { recursive: true, dereference: true });
    await rename(staging, dest);
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }
  try {
    const sha = await checkpointSha256(dest);
    const version = await registerAdapterVersion(prisma, {
      name: a.name,
      endpoint,
      adapterDir: dest,
      algorithm: 'external',
      checkpointSha256: sha,
      metrics: {
        adapter: {
          source,
          baseModel: adapter.baseModel,
          rank: adapter.rank,
          alpha: adapter.alpha,
          targetModules: adapter.targetModules,
          modules: adapter.modules,
        },
      },
      audit: {
        actor: a.actor,
        action: 'policy.add',
        detail: { kind: 'adapter', endpoint: endpoint.name, source, sha256: sha },
      },
    });
    a.log?.info({ policy: version.name, endpoint: endpoint.name, dir: dest }, 'adapter version registered');
    return { version, adapter };
  } catch (err) {
    await rm(dest, { recursive: true, force: true });
    throw err;
  }
}
