// Which policy version answers people, at the database level, for the bot's moderator commands and the
// trainer's deploy/rollback/promotion alike. Exactly one version is `deployed`; deploying another retires the
// current one, and a rollback re-deploys the one deployed before it. Every change is written to the audit log
// and announced with NOTIFY policy_deployed <version id> so running bots switch at once (on PGlite they also poll).
// Deploy and rollback by name are here too, with errors worded for a person (PolicyError): the bot's /mod
// commands, the CLI and the trainer's promotion all call these, so the rules cannot drift apart.
import type { Database } from './db.ts';
import type { PolicyVersion, Prisma, PrismaClient } from './generated/client.ts';

export const POLICY_CHANNEL = 'policy_deployed';

/** A deploy or rollback that cannot be done; the message is meant for the person who asked. */
export class PolicyError extends Error {
  override name = 'PolicyError';
}

export async function deployedPolicy(prisma: PrismaClient): Promise<PolicyVersion | null> {
  return prisma.policyVersion.findFirst({ where: { status: 'deployed' }, orderBy: { deployedAt: 'desc' } });
}

/** The version a rollback would re-deploy: the most recently deployed one that is not deployed now. */
export async function previouslyDeployedPolicy(prisma: PrismaClient): Promise<PolicyVersion | null> {
  const current = await deployedPolicy(prisma);
  return prisma.policyVersion.findFirst({
    where: { deployedAt: { not: null }, status: { not: 'deployed' }, ...(current ? { id: { not: current.id } } : {}) },
    orderBy: { deployedAt: 'desc' },
  });
}

export interface SwitchOptions {
  /** Extra audit-log detail (gate scores, the version rolled back from). */
  detail?: Record<string, unknown>;
  /**
   * 'required' (default): a failed NOTIFY is thrown, after the switch has committed. 'best-effort': it is
   * ignored — for callers that must report the committed switch whatever happens to the announcement.
   */
  notify?: 'required' | 'best-effort';
  /** The Discord guild the switch was asked from (kept in the audit entry). */
  guildId?: string | null;
}

/**
 * Deploys `target` in one transaction (retiring whatever else is deployed, recording the audit entry `action` by
 * `actor`), then announces it on POLICY_CHANNEL.
 */
export async function switchDeployedPolicy(db: Database, actor: string, target: PolicyVersion, action: string, opts: SwitchOptions = {}): Promise<PolicyVersion> {
  const deployed = await db.prisma.$transaction(async (tx) => {
    const now = new Date();
    const previous = await tx.policyVersion.findMany({ where: { status: 'deployed', id: { not: target.id } }, select: { name: true } });
    await tx.policyVersion.updateMany({ where: { status: 'deployed', id: { not: target.id } }, data: { status: 'retired', retiredAt: now } });
    const v = await tx.policyVersion.update({ where: { id: target.id }, data: { status: 'deployed', deployedAt: now, retiredAt: null } });
    await tx.auditLog.create({
      data: { actor, action, target: v.name, guildId: opts.guildId ?? null, detail: { versionId: v.id, previous: previous.map((p) => p.name), ...opts.detail } as Prisma.InputJsonObject },
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
export async function rollbackDeployedPolicy(db: Database, actor: string, opts: Pick<SwitchOptions, 'notify' | 'guildId'> = {}): Promise<PolicyVersion | null> {
  const current = await deployedPolicy(db.prisma);
  const previous = await previouslyDeployedPolicy(db.prisma);
  if (!previous) return null;
  return switchDeployedPolicy(db, actor, previous, 'policy.rollback', { ...opts, detail: current ? { from: current.name } : {} });
}

/**
 * The checkpoint directory of a version Sweetloop runs itself. Endpoint versions have none (their weights live
 * with the server): callers that need weights say so clearly instead of failing on a null path.
 */
export function checkpointOf(v: Pick<PolicyVersion, 'name' | 'kind' | 'checkpointPath'>): string {
  if (!v.checkpointPath) throw new Error(`policy version "${v.name}" is served by an endpoint (kind ${v.kind}): it has no local checkpoint`);
  return v.checkpointPath;
}

/** Deploys the version named `name` (audit action 'policy.deploy'); PolicyError when unknown or already deployed. */
export async function deployPolicyByName(db: Database, actor: string, name: string, opts: SwitchOptions = {}): Promise<PolicyVersion> {
  const target = await db.prisma.policyVersion.findUnique({ where: { name } });
  if (!target) {
    const known = await db.prisma.policyVersion.findMany({ select: { name: true }, orderBy: { createdAt: 'desc' }, take: 10 });
    throw new PolicyError(`No policy version named "${name}". Recent versions: ${known.map((k) => k.name).join(', ') || 'none'}.`);
  }
  if (target.status === 'deployed') throw new PolicyError(`"${name}" is already deployed.`);
  return switchDeployedPolicy(db, actor, target, 'policy.deploy', opts);
}

/** Re-deploys the version deployed before the current one; PolicyError when there is none. */
export async function rollbackPolicy(db: Database, actor: string, opts: Pick<SwitchOptions, 'notify' | 'guildId'> = {}): Promise<PolicyVersion> {
  const v = await rollbackDeployedPolicy(db, actor, opts);
  if (!v) throw new PolicyError('There is no earlier deployed version to roll back to.');
  return v;
}
