// The trainer's promotion gate. Deploy and rollback themselves (one deployed version, retire the previous,
// audit log, NOTIFY policy_deployed) live in prisma/policy-store.ts, shared with the bot and the CLI.
// The promotion gate evaluates a candidate and the deployed version on the same test tasks with the same seeds
// and deploys the candidate only if its mean score is at least the deployed one's minus the margin.
import type { Database } from '../prisma/db.ts';
import type { PolicyVersion, Prisma } from '../prisma/generated/client.ts';
import { deployedPolicy, switchDeployedPolicy } from '../prisma/policy-store.ts';

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
  const deployedBefore = await deployedPolicy(db.prisma);
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
  const v = await switchDeployedPolicy(db, actor, candidate, 'policy.promote', { detail: { ...(scores ?? {}), margin } });
  return { decision: 'deployed', candidate: v, deployedBefore, scores, margin };
}
