// Which policy version answers people. Exactly one version is `deployed` at a time; deploying another retires
// the current one, and a rollback re-deploys the version that was deployed before it. Every change is written
// to the audit log and announced on the `policy_deployed` channel so running bots switch at once.
import type { PolicyVersion, PrismaClient } from '../prisma/generated/client.ts';
import type { Database } from '../prisma/db.ts';

export const POLICY_CHANNEL = 'policy_deployed';

export class PolicyError extends Error {
  override name = 'PolicyError';
}

export async function deployedPolicy(prisma: PrismaClient): Promise<PolicyVersion | null> {
  return prisma.policyVersion.findFirst({ where: { status: 'deployed' }, orderBy: { deployedAt: 'desc' } });
}

async function switchTo(db: Database, actor: string, target: PolicyVersion, action: string): Promise<PolicyVersion> {
  const deployed = await db.prisma.$transaction(async (tx) => {
    const now = new Date();
    const previous = await tx.policyVersion.findMany({ where: { status: 'deployed', id: { not: target.id } } });
    await tx.policyVersion.updateMany({ where: { status: 'deployed', id: { not: target.id } }, data: { status: 'retired', retiredAt: now } });
    const v = await tx.policyVersion.update({ where: { id: target.id }, data: { status: 'deployed', deployedAt: now, retiredAt: null } });
    await tx.auditLog.create({
      data: { actor, action, target: v.name, detail: { versionId: v.id, previous: previous.map((p) => p.name) } },
    });
    return v;
  });
  await db.notify(POLICY_CHANNEL, deployed.id).catch(() => {});
  return deployed;
}

export async function deployPolicy(db: Database, actor: string, name: string): Promise<PolicyVersion> {
  const target = await db.prisma.policyVersion.findUnique({ where: { name } });
  if (!target) {
    const known = await db.prisma.policyVersion.findMany({ select: { name: true }, orderBy: { createdAt: 'desc' }, take: 10 });
    throw new PolicyError(`No policy version named "${name}". Recent versions: ${known.map((k) => k.name).join(', ') || 'none'}.`);
  }
  if (target.status === 'deployed') throw new PolicyError(`"${name}" is already deployed.`);
  return switchTo(db, actor, target, 'policy.deploy');
}

/** Re-deploys the version deployed before the current one. */
export async function rollbackPolicy(db: Database, actor: string): Promise<PolicyVersion> {
  const current = await deployedPolicy(db.prisma);
  const previous = await db.prisma.policyVersion.findFirst({
    where: { deployedAt: { not: null }, status: { not: 'deployed' }, ...(current ? { id: { not: current.id } } : {}) },
    orderBy: { deployedAt: 'desc' },
  });
  if (!previous) throw new PolicyError('There is no earlier deployed version to roll back to.');
  return switchTo(db, actor, previous, 'policy.rollback');
}
