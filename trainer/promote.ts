// Deploying policy versions. Exactly one version is `deployed`; deploying another retires it, and a rollback
// re-deploys the one deployed before. Every change is written to the audit log and announced with
// NOTIFY policy_deployed <version id> (the bot re-reads the deployed version; on PGlite it also polls).
// The promotion gate evaluates a candidate and the deployed version on the same test tasks with the same seeds
// and deploys the candidate only if its mean score is at least the deployed one's minus the margin.
import type { Database } from '../prisma/db.ts';
import type { PolicyVersion, Prisma } from '../prisma/generated/client.ts';
import { deployedVersion } from './versions.ts';

export const POLICY_CHANNEL = 'policy_deployed';

async function switchTo(db: Database, actor: string, target: PolicyVersion, action: string, detail: Record<string, unknown> = {}): Promise<PolicyVersion> {
  const v = await db.prisma.$transaction(async (tx) => {
    const now = new Date();
    const previous = await tx.policyVersion.findMany({ where: { status: 'deployed', id: { not: target.id } }, select: { name: true } });
    await tx.policyVersion.updateMany({ where: { status: 'deployed', id: { not: target.id } }, data: { status: 'retired', retiredAt: now } });
    const v = await tx.policyVersion.update({ where: { id: target.id }, data: { status: 'deployed', deployedAt: now, retiredAt: null } });
    await tx.auditLog.create({
      data: { actor, action, target: v.name, detail: { versionId: v.id, previous: previous.map((p) => p.name), ...detail } as Prisma.InputJsonObject },
    });
    return v;
  });
  await db.notify(POLICY_CHANNEL, v.id);
  return v;
}

/** Manual deploy of a named version. */
export async function deployVersion(db: Database, actor: string, name: string, detail: Record<string, unknown> = {}): Promise<PolicyVersion> {
  const target = await db.prisma.policyVersion.findUnique({ where: { name } });
  if (!target) throw new Error(`no policy version named "${name}"`);
  if (target.status === 'deployed') throw new Error(`"${name}" is already deployed`);
  return switchTo(db, actor, target, 'policy.deploy', detail);
}

/** Re-deploys the version that was deployed before the current one. */
export async function rollbackVersion(db: Database, actor: string): Promise<PolicyVersion> {
  const current = await deployedVersion(db.prisma);
  const previous = await db.prisma.policyVersion.findFirst({
    where: { deployedAt: { not: null }, status: { not: 'deployed' }, ...(current ? { id: { not: current.id } } : {}) },
    orderBy: { deployedAt: 'desc' },
  });
  if (!previous) throw new Error('there is no earlier deployed version to roll back to');
  return switchTo(db, actor, previous, 'policy.rollback', current ? { from: current.name } : {});
}

export interface GateScores {
  candidate: number;
  deployed: number;
}

/** The gate's rule, alone: deploy when candidate >= deployed - margin. */
export function passesGate(scores: GateScores, margin: number): boolean {
  return scores.candidate >= scores.deployed - margin;
}

export interface PromotionResult {
  decision: 'deployed' | 'kept';
  candidate: PolicyVersion;
  deployedBefore: PolicyVersion | null;
  scores: GateScores | null;
  margin: number;
}

/**
 * Evaluates the candidate and the deployed version with `evaluateMean` (the same tasks and seeds for both)
 * and deploys the candidate if it passes the gate. With nothing deployed, the candidate is deployed.
 */
export async function promote(
  db: Database,
  candidateName: string,
  margin: number,
  evaluateMean: (v: PolicyVersion) => Promise<number>,
  actor = 'trainer',
): Promise<PromotionResult> {
  const candidate = await db.prisma.policyVersion.findUnique({ where: { name: candidateName } });
  if (!candidate) throw new Error(`no policy version named "${candidateName}"`);
  if (candidate.status === 'deployed') throw new Error(`"${candidateName}" is already deployed`);
  const deployedBefore = await deployedVersion(db.prisma);
  let scores: GateScores | null = null;
  if (deployedBefore) {
    scores = { candidate: await evaluateMean(candidate), deployed: await evaluateMean(deployedBefore) };
  }
  const metrics = { ...((candidate.metrics as Record<string, unknown> | null) ?? {}), gate: { ...scores, margin, against: deployedBefore?.name ?? null } };
  await db.prisma.policyVersion.update({ where: { id: candidate.id }, data: { metrics: metrics as Prisma.InputJsonObject } });
  if (scores && !passesGate(scores, margin)) {
    await db.prisma.auditLog.create({
      data: { actor, action: 'policy.keep-candidate', target: candidate.name, detail: { ...scores, margin, deployed: deployedBefore!.name } },
    });
    return { decision: 'kept', candidate, deployedBefore, scores, margin };
  }
  const v = await switchTo(db, actor, candidate, 'policy.promote', { ...(scores ?? {}), margin });
  return { decision: 'deployed', candidate: v, deployedBefore, scores, margin };
}
