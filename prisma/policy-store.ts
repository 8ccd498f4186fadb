// Which policy version answers people, at the database level, for the bot's moderator commands and the
// trainer's deploy/rollback/promotion alike. Exactly one version is `deployed`; deploying another retires the
// current one, and a rollback re-deploys the one deployed before it. Every change is written to the audit log
// and announced with NOTIFY policy_deployed <version id> so running bots switch at once (on PGlite they also poll).
// Callers phrase their own errors (a Discord reply, a CLI message); this module only finds and switches.
import type { Database } from './db.ts';
import type { PolicyVersion, Prisma, PrismaClient } from './generated/client.ts';

export const POLICY_CHANNEL = 'policy_deployed';

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
      data: { actor, action, target: v.name, detail: { versionId: v.id, previous: previous.map((p) => p.name), ...opts.detail } as Prisma.InputJsonObject },
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
export async function rollbackDeployedPolicy(db: Database, actor: string, opts: Pick<SwitchOptions, 'notify'> = {}): Promise<PolicyVersion | null> {
  const current = await deployedPolicy(db.prisma);
  const previous = await previouslyDeployedPolicy(db.prisma);
  if (!previous) return null;
  return switchDeployedPolicy(db, actor, previous, 'policy.rollback', { ...opts, detail: current ? { from: current.name } : {} });
}
