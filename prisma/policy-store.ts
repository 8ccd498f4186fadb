// Which policy version answers people, at the database level, for the bot's moderator commands and the
// trainer's deploy/rollback/promotion alike. Exactly one version is `deployed`; deploying another retires the
// current one, and a rollback re-deploys the one deployed before it. Every change is written to the audit log
// and announced with NOTIFY policy_deployed <version id> so running bots switch at once (on PGlite they also poll).
// Deploy and rollback by name are here too, with errors worded for a person (PolicyError): the bot's /mod
// commands, the CLI and the trainer's promotion all call these, so the rules cannot drift apart. New versions
// come in through registerVersion alone (training runs, endpoint and adapter registrations, the bot's first
// start), always as candidates: only switchDeployedPolicy makes one deployed. A version leaves through
// removePolicyVersion (status 'removed', the row kept for the sessions and runs that name it); an endpoint
// version's address changes through updateServing. A version trained on sessions of a person who had their data
// deleted is deployed (or rolled back to, promoted, A/B-tested) only with an operator's explicit force, audited:
// erasedDataBlocker is that one rule.
import { randomUUID } from 'node:crypto';
import type { Database } from './db.ts';
import type { PolicyVersion, Prisma, PrismaClient } from './generated/client.ts';
import { audit } from './moderation-store.ts';

export const POLICY_CHANNEL = 'policy_deployed';

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

/** The version a rollback would re-deploy: the most recently deployed one that is not deployed now. */
export async function previouslyDeployedPolicy(prisma: PrismaClient): Promise<PolicyVersion | null> {
  const current = await deployedPolicy(prisma);
  return prisma.policyVersion.findFirst({
    where: {
      deployedAt: { not: null },
      status: { notIn: ['deployed', 'removed'] },
      ...(current ? { id: { not: current.id } } : {}),
    },
    orderBy: { deployedAt: 'desc' },
  });
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

/** Who asks to deploy a version trained on erased data anyway. */
export interface ForceOptions {
  /** The explicit override (CLI --force, /mod force:True). */
  force?: boolean;
  /** Whether the one asking is an operator (the CLI's user is: they hold the database). */
  operator?: boolean;
}

/**
 * The one rule for putting a version trained on erased data in front of people (every deploy, rollback and
 * promotion goes through switchDeployedPolicy, which applies it): only with an operator's explicit force. Null
 * when `v` may be deployed; else the reason, for the person who asked.
 */
export function erasedDataBlocker(v: Pick<PolicyVersion, 'name' | 'metrics'>, o: ForceOptions): string | null {
  if (!trainedOnErasedData(v)) return null;
  const why = `"${v.name}" was trained on sessions of a person whose data has since been deleted (privacy delete)`;
  if (!o.force)
    return `${why}: deploying it needs an operator's explicit force (\`--force\` on the command line, \`force: True\` in /mod), which is audited. Better: train a new version without their sessions.`;
  if (!o.operator) return `${why}: only an operator may force it into service.`;
  return null;
}

/** PolicyError when erasedDataBlocker refuses `v`. */
export function assertDeployable(v: Pick<PolicyVersion, 'name' | 'metrics'>, o: ForceOptions): void {
  const blocker = erasedDataBlocker(v, o);
  if (blocker) throw new PolicyError(blocker);
}

export interface SwitchOptions extends ForceOptions {
  /** Extra audit-log detail (gate scores, the version rolled back from). */
  detail?: Record<string, unknown>;
  /**
   * 'required' (default): a failed NOTIFY is thrown, after the switch has committed. 'best-effort': it is
   * ignored — for callers that must report the committed switch whatever happens to the announcement.
   */
  notify?: 'required' | 'best-effort';
  /** The Discord guild the switch was asked from (kept in the audit entry). */
  guildId?: string | null;
  /**
   * Run on the target once the rules allow the switch and before it is made, e.g. loading an adapter version into
   * its server (trainer/policies/lifecycle.ts loadBeforeDeploy); a throw leaves everything as it was.
   */
  prepare?: (target: PolicyVersion) => Promise<unknown>;
}

/**
 * Deploys `target` in one transaction (retiring whatever else is deployed, recording the audit entry `action` by
 * `actor`), then announces it on POLICY_CHANNEL. A version trained on erased data needs an operator's force
 * (erasedDataBlocker, checked on the row as it is inside the transaction); a forced one also gets the audit
 * entry 'policy.force-erased-data'.
 */
export async function switchDeployedPolicy(
  db: Database,
  actor: string,
  target: PolicyVersion,
  action: string,
  opts: SwitchOptions = {},
): Promise<PolicyVersion> {
  if (opts.prepare) {
    assertDeployable(target, opts);
    await opts.prepare(target);
  }
  const deployed = await db.prisma.$transaction(async (tx) => {
    const now = new Date();
    const fresh = await tx.policyVersion.findUniqueOrThrow({ where: { id: target.id } });
    assertDeployable(fresh, opts);
    if (trainedOnErasedData(fresh)) {
      await tx.auditLog.create({
        data: {
          actor,
          action: 'policy.force-erased-data',
          target: fresh.name,
          guildId: opts.guildId ?? null,
          detail: { versionId: fresh.id, via: action },
        },
      });
    }
    const previous = await tx.policyVersion.findMany({
      where: { status: 'deployed', id: { not: target.id } },
      select: { name: true },
    });
    await tx.policyVersion.updateMany({
      where: { status: 'deployed', id: { not: target.id } },
      data: { status: 'retired', retiredAt: now },
    });
    const v = await tx.policyVersion.update({
      where: { id: target.id },
      data: { status: 'deployed', deployedAt: now, retiredAt: null },
    });
    await tx.auditLog.create({
      data: {
        actor,
        action,
        target: v.name,
        guildId: opts.guildId ?? null,
        detail: { versionId: v.id, previous: previous.map((p) => p.name), ...opts.detail } as Prisma.InputJsonObject,
      },
    });
    return v;
  });
  const announced = db.notify(POLICY_CHANNEL, deployed.id);
  if (opts.notify === 'best-effort') await announced.catch(() => {});
  else await announced;
  return deployed;
}

/**
 * Re-deploys the version deployed before the current one (audit action 'policy.rollback', detail `from` the
 * current version's name). Null when there is none; nothing changes then.
 */
export async function rollbackDeployedPolicy(
  db: Database,
  actor: string,
  opts: Pick<SwitchOptions, 'notify' | 'guildId' | 'force' | 'operator' | 'prepare'> = {},
): Promise<PolicyVersion | null> {
  const current = await deployedPolicy(db.prisma);
  const previous = await previouslyDeployedPolicy(db.prisma);
  if (!previous) return null;
  return switchDeployedPolicy(db, actor, previous, 'policy.rollback', {
    ...opts,
    detail: current ? { from: current.name } : {},
  });
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

/** Deploys the version named `name` (audit action 'policy.deploy'); PolicyError when unknown or already deployed. */
export async function deployPolicyByName(
  db: Database,
  actor: string,
  name: string,
  opts: SwitchOptions = {},
): Promise<PolicyVersion> {
  const target = await resolvePolicyName(db.prisma, name);
  if (target.status === 'deployed') throw new PolicyError(`"${target.name}" is already deployed.`);
  if (target.status === 'removed')
    throw new PolicyError(`"${target.name}" was removed (sweetloop policy remove): it cannot be deployed.`);
  return switchDeployedPolicy(db, actor, target, 'policy.deploy', opts);
}

/** Re-deploys the version deployed before the current one; PolicyError when there is none. */
export async function rollbackPolicy(
  db: Database,
  actor: string,
  opts: Pick<SwitchOptions, 'notify' | 'guildId' | 'force' | 'operator' | 'prepare'> = {},
): Promise<PolicyVersion> {
  const v = await rollbackDeployedPolicy(db, actor, opts);
  if (!v) throw new PolicyError('There is no earlier deployed version to roll back to.');
  return v;
}

/**
 * Records a promotion gate's evidence on the candidate (metrics.gate, beside what training stored); a candidate the
 * gate keeps also gets the audit entry 'policy.keep-candidate'. A deployed one is audited by its switch.
 */
export async function recordGateEvidence(
  prisma: PrismaClient,
  actor: string,
  candidate: PolicyVersion,
  gate: Prisma.InputJsonObject,
  decision: 'deployed' | 'kept',
): Promise<void> {
  const metrics = { ...((candidate.metrics as Record<string, unknown> | null) ?? {}), gate };
  await prisma.$transaction(async (tx) => {
    await tx.policyVersion.update({
      where: { id: candidate.id },
      data: { metrics: metrics as Prisma.InputJsonObject },
    });
    if (decision === 'kept')
      await tx.auditLog.create({
        data: { actor, action: 'policy.keep-candidate', target: candidate.name, detail: gate },
      });
  });
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
