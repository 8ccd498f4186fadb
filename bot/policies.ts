// The moderators' /policy deploy and /policy rollback: the database rules live in prisma/policy-store.ts (shared
// with the trainer); this wrapper turns their outcomes into messages a moderator can act on.
import type { PolicyVersion } from '../prisma/generated/client.ts';
import type { Database } from '../prisma/db.ts';
import { rollbackDeployedPolicy, switchDeployedPolicy } from '../prisma/policy-store.ts';

export class PolicyError extends Error {
  override name = 'PolicyError';
}

// The switch has committed by the time NOTIFY runs, so a failed announcement must not turn the moderator's reply
// into an error: bots that miss it still see the change on their next poll or restart.
const NOTIFY = { notify: 'best-effort' } as const;

export async function deployPolicy(db: Database, actor: string, name: string): Promise<PolicyVersion> {
  const target = await db.prisma.policyVersion.findUnique({ where: { name } });
  if (!target) {
    const known = await db.prisma.policyVersion.findMany({ select: { name: true }, orderBy: { createdAt: 'desc' }, take: 10 });
    throw new PolicyError(`No policy version named "${name}". Recent versions: ${known.map((k) => k.name).join(', ') || 'none'}.`);
  }
  if (target.status === 'deployed') throw new PolicyError(`"${name}" is already deployed.`);
  return switchDeployedPolicy(db, actor, target, 'policy.deploy', NOTIFY);
}

/** Re-deploys the version deployed before the current one. */
export async function rollbackPolicy(db: Database, actor: string): Promise<PolicyVersion> {
  const v = await rollbackDeployedPolicy(db, actor, NOTIFY);
  if (!v) throw new PolicyError('There is no earlier deployed version to roll back to.');
  return v;
}
