// The policy versions at the database level. New versions come in through registerVersion alone (training runs,
// endpoint and adapter registrations, the bot's first start), always as candidates: only deployment-store.ts's
// switchDeployedPolicy makes one deployed (deploy, rollback, promotion). Here too: the one reading of a version's
// name every command shares (resolvePolicyName, PolicyError worded for a person), the deployed one, whether a
// version was trained on erased data, and a version's way out: removePolicyVersion (status 'removed', the row kept
// for the sessions and runs that name it); an endpoint version's address changes through updateServing.
import { randomUUID } from 'node:crypto';
import type { PolicyVersion, Prisma, PrismaClient } from './generated/client.ts';
import { audit } from './moderation-store.ts';

/** A deploy or rollback that cannot be done; the message is meant for the person who asked. */
export class PolicyError extends Error {
  override name = 'PolicyError';
}

export type PolicyKind = 'checkpoint' | 'endpoint' | 'adapter' | 'gguf';

/** A new version (kinds: prisma/schema.prisma, model PolicyVersion). */
export interface VersionRegistration {
  name: string;
  /** 'starter' | 'sweet' | 'mtdpo' | 'rft' | 'external'. */
  algorithm: string;
  /** Default 'checkpoint'. */
  kind?: PolicyKind;
  /** Null for endpoint versions: their weights live with the server. */
  checkpointPath: string | null;
  checkpointSha256?: string | null;
  parentId?: string | null;
  trainingRunId?: string | null;
  metrics?: Prisma.InputJsonValue;
  /** Serving settings; a function of the row when they name it (an adapter's server name carries its id). */
  serving?: Prisma.InputJsonObject | ((v: { id: string; name: string }) => Prisma.InputJsonObject);
  /** An audit entry written with the row (the trainer's 'policy.publish'). */
  audit?: { actor: string; action: string; detail?: Record<string, unknown> };
  /**
   * 'reuse': a version of this name already registered is the same version (the starter and a configured model
   * directory are named by their checkpoint's sha256), returned with its checkpoint path set to where it lies now.
   * Default 'refuse': the unique name is violated (callers taking names from people check them first).
   */
  ifExists?: 'refuse' | 'reuse';
}

/**
 * Registers a candidate version, with its audit entry when one is given, in one transaction. `alongside` adds the
 * writes that must commit with the row or not at all (run-store.ts: the run that published it marked succeeded).
 */
export async function registerVersion(
  prisma: PrismaClient,
  r: VersionRegistration,
  alongside?: (tx: Prisma.TransactionClient, v: PolicyVersion) => Promise<void>,
): Promise<PolicyVersion> {
  const id = randomUUID();
  const serving = typeof r.serving === 'function' ? r.serving({ id, name: r.name }) : r.serving;
  const data = {
    id,
    name: r.name,
    algorithm: r.algorithm,
    kind: r.kind ?? 'checkpoint',
    checkpointPath: r.checkpointPath,
    checkpointSha256: r.checkpointSha256 ?? null,
    parentId: r.parentId ?? null,
    trainingRunId: r.trainingRunId ?? null,
    status: 'candidate' as const,
    ...(r.metrics !== undefined ? { metrics: r.metrics } : {}),
    ...(serving !== undefined ? { serving } : {}),
  };
  const write = async (tx: Prisma.TransactionClient) => {
    const v =
      r.ifExists === 'reuse'
        ? await tx.policyVersion.upsert({
            where: { name: r.name },
            create: data,
            update: { checkpointPath: r.checkpointPath },
          })
        : await tx.policyVersion.create({ data });
    if (r.audit)
      await tx.auditLog.create({
        data: {
          actor: r.audit.actor,
          action: r.audit.action,
          target: v.name,
          detail: { versionId: v.id, ...r.audit.detail } as Prisma.InputJsonObject,
        },
      });
    await alongside?.(tx, v);
    return v;
  };
  return prisma.$transaction(write);
}

/** The algorithm recorded for the built-in starter policy (bot/bootstrap.ts, trainer/versions.ts register it so). */
export const STARTER_ALGORITHM = 'starter';

/**
 * Whether the versions that serve people are all the built-in starter: a toy model trained in minutes on a CPU
 * (trainer/recipes/starter.ts), fine for trying the bot, not for a study. The one rule behind the warning at
 * `start` (bot/main.ts) and in a study's status (bot/study-progress.ts formatStudy). None serving: false.
 */
export function servesOnlyStarter(versions: readonly Pick<PolicyVersion, 'algorithm'>[]): boolean {
  return versions.length > 0 && versions.every((v) => v.algorithm === STARTER_ALGORITHM);
}

export async function deployedPolicy(prisma: PrismaClient): Promise<PolicyVersion | null> {
  return prisma.policyVersion.findFirst({ where: { status: 'deployed' }, orderBy: { deployedAt: 'desc' } });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The one reading of a policy name every command shares: `deployed` (the version serving people), `starter` (the
 * built-in starter: `starter` builds and registers it where a caller can, trainer/versions.ts; otherwise the newest
 * registered one), a version's name, or its id. PolicyError naming the recent versions when there is none such.
 */
export async function resolvePolicyName(
  prisma: PrismaClient | Prisma.TransactionClient,
  ref: string,
  o: { starter?: () => Promise<PolicyVersion> } = {},
): Promise<PolicyVersion> {
  const db = prisma as PrismaClient;
  if (ref === 'deployed') {
    const v = await deployedPolicy(db);
    if (!v)
      throw new PolicyError('No policy version is deployed yet (run `npm start` once, or `sweetloop deploy NAME`).');
    return v;
  }
  if (ref === 'starter') {
    if (o.starter) return o.starter();
    // The built-in starter, else a version registered under the name "starter" (as a study may have named it).
    const v =
      (await db.policyVersion.findFirst({
        where: { algorithm: STARTER_ALGORITHM, status: { not: 'removed' } },
        orderBy: { createdAt: 'desc' },
      })) ?? (await db.policyVersion.findFirst({ where: { name: 'starter' } }));
    if (!v)
      throw new PolicyError(
        'The starter policy is not registered yet: run `npm start` once (it installs and registers it).',
      );
    return v;
  }
  const v = await db.policyVersion.findFirst({
    where: UUID.test(ref) ? { OR: [{ name: ref }, { id: ref }] } : { name: ref },
  });
  if (v) return v;
  const known = await db.policyVersion.findMany({ select: { name: true }, orderBy: { createdAt: 'desc' }, take: 10 });
  throw new PolicyError(
    `No policy version named "${ref}". Recent versions: ${known.map((k) => k.name).join(', ') || 'none'} (or starter, deployed).`,
  );
}

/**
 * Whether a version was trained on sessions of a person who later had their data deleted: /privacy delete and
 * `sweetloop privacy delete` mark it (prisma/privacy-store.ts markTrainedOnErasedData, metrics.trainedOnErasedData).
 */
export function trainedOnErasedData(v: Pick<PolicyVersion, 'metrics'>): boolean {
  const m = v.metrics as { trainedOnErasedData?: unknown } | null;
  return !!m && typeof m === 'object' && m.trainedOnErasedData === true;
}

/** The mark shown beside such a version's name wherever versions are listed (CLI, /mod, reports). */
export const ERASED_DATA_MARK = '[trained on erased data]';

/** `name`, with ERASED_DATA_MARK when the version carries it. */
export function markedName(v: Pick<PolicyVersion, 'name' | 'metrics'>): string {
  return trainedOnErasedData(v) ? `${v.name} ${ERASED_DATA_MARK}` : v.name;
}

/**
 * The checkpoint directory of a version Sweetloop runs itself. Endpoint versions have none (their weights live
 * with the server): callers that need weights say so clearly instead of failing on a null path.
 */
export function checkpointOf(v: Pick<PolicyVersion, 'name' | 'kind' | 'checkpointPath'>): string {
  if (!v.checkpointPath)
    throw new Error(`policy version "${v.name}" is served by an endpoint (kind ${v.kind}): it has no local checkpoint`);
  return v.checkpointPath;
}

/**
 * Why `v` cannot be removed now, or null: the deployed version, one already removed, one that active sessions,
 * a running A/B experiment or an open study still play, and an endpoint version that adapter versions still use.
 */
async function removalBlocker(tx: Prisma.TransactionClient | PrismaClient, v: PolicyVersion): Promise<string | null> {
  if (v.status === 'deployed')
    return `"${v.name}" is the deployed version: deploy another one (or roll back) before removing it.`;
  if (v.status === 'removed') return `"${v.name}" was removed already.`;
  const active = await tx.session.count({ where: { policyVersionId: v.id, status: 'active' } });
  if (active > 0) return `"${v.name}" is playing ${active} active session(s): remove it once they have ended.`;
  const experiment = await tx.experiment.findFirst({
    where: { status: 'running', OR: [{ candidateId: v.id }, { controlId: v.id }] },
    select: { id: true },
  });
  if (experiment) return `"${v.name}" is in the running A/B experiment: stop it first (/mod experiment stop).`;
  const study = await tx.studyArm.findFirst({
    where: { policyVersionId: v.id, study: { status: { not: 'closed' } } },
    select: { study: { select: { name: true } } },
  });
  if (study) return `"${v.name}" is an arm of the study "${study.study.name}", which is not closed.`;
  if (v.kind === 'endpoint') {
    const adapters = await tx.policyVersion.findMany({
      where: { kind: 'adapter', status: { not: 'removed' }, serving: { path: ['endpointVersionId'], equals: v.id } },
      select: { name: true },
    });
    if (adapters.length)
      return `adapter version(s) ${adapters.map((a) => `"${a.name}"`).join(', ')} are served on "${v.name}": remove them first.`;
  }
  return null;
}

/** The version named `name` if it can be removed now; PolicyError naming why not (unknown name included). */
export async function removableVersion(prisma: PrismaClient, name: string): Promise<PolicyVersion> {
  const v = await prisma.policyVersion.findUnique({ where: { name } });
  if (!v) throw new PolicyError(`No policy version named "${name}".`);
  const blocker = await removalBlocker(prisma, v);
  if (blocker) throw new PolicyError(blocker);
  return v;
}

/**
 * Takes a version out of service (status 'removed', audit action 'policy.remove' with `detail`): the row stays,
 * since sessions, training runs and the audit log name it. The rules are checked again inside the transaction.
 */
export async function removePolicyVersion(
  prisma: PrismaClient,
  actor: string,
  name: string,
  detail: Record<string, unknown> = {},
): Promise<PolicyVersion> {
  return prisma.$transaction(async (tx) => {
    const v = await tx.policyVersion.findUnique({ where: { name } });
    if (!v) throw new PolicyError(`No policy version named "${name}".`);
    const blocker = await removalBlocker(tx, v);
    if (blocker) throw new PolicyError(blocker);
    const removed = await tx.policyVersion.update({
      where: { id: v.id },
      data: { status: 'removed', retiredAt: v.retiredAt ?? new Date() },
    });
    await audit(tx, actor, 'policy.remove', v.name, {
      versionId: v.id,
      kind: v.kind,
      previousStatus: v.status,
      ...detail,
    } as Prisma.InputJsonObject);
    return removed;
  });
}

/**
 * Replaces an endpoint version's serving settings (its adapter versions follow: they refer to it), audited as
 * 'policy.update' with what changed.
 */
export async function updateServing(
  prisma: PrismaClient,
  actor: string,
  v: PolicyVersion,
  serving: Prisma.InputJsonObject,
  detail: Record<string, unknown>,
): Promise<PolicyVersion> {
  if (v.kind !== 'endpoint')
    throw new PolicyError(`"${v.name}" is a ${v.kind} version: only an endpoint version's server can be changed.`);
  if (v.status === 'removed') throw new PolicyError(`"${v.name}" was removed: it cannot be changed.`);
  return prisma.$transaction(async (tx) => {
    const updated = await tx.policyVersion.update({ where: { id: v.id }, data: { serving } });
    await audit(tx, actor, 'policy.update', v.name, { versionId: v.id, ...detail } as Prisma.InputJsonObject);
    return updated;
  });
}
