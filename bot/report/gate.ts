// The last promotion-gate decision, for `/mod stats` and the report: read back from the audit log (the gate
// writes its evidence there, as well as on the candidate version) and formatted by the trainer's own formatter,
// so the CLI, the bot and the report say the same thing.
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { formatGateEvidence, type GateEvidence } from '../../trainer/promote.ts';

const GATE_ACTIONS = ['policy.promote', 'policy.keep-candidate'];

/** The evidence of the latest gate decision, or null when the gate never ran (manual deploys are not gate decisions). */
export async function lastGateDecision(prisma: PrismaClient): Promise<GateEvidence | null> {
  const rows = await prisma.auditLog.findMany({
    where: { action: { in: GATE_ACTIONS } },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: 20,
  });
  for (const row of rows) {
    const e = parseGateEvidence(row.detail);
    if (e) return e;
  }
  return null;
}

/** The evidence in an audit-log detail, or null for an entry written before the gate kept evidence. */
export function parseGateEvidence(detail: unknown): GateEvidence | null {
  if (!detail || typeof detail !== 'object') return null;
  const d = detail as Partial<GateEvidence>;
  if (
    typeof d.verdict !== 'string' ||
    typeof d.decision !== 'string' ||
    typeof d.candidate !== 'string' ||
    typeof d.alpha !== 'number'
  )
    return null;
  return d as GateEvidence;
}

/** One line for `/mod stats`: what the gate decided last, on how many games, and why. */
export function gateStatsLine(e: GateEvidence | null): string {
  if (!e) return 'Promotion gate: no decision yet.';
  const when = e.decidedAt ? ` (${e.decidedAt.slice(0, 16).replace('T', ' ')} UTC)` : '';
  if (e.verdict === 'nothing-deployed')
    return `Promotion gate${when}: deployed ${e.candidate}, nothing was deployed to compare with.`;
  const diff = e.scoreDifference
    ? `${e.scoreDifference.estimate >= 0 ? '+' : ''}${(e.scoreDifference.estimate * 100).toFixed(1)} points`
    : '-';
  const p = e.scorePValue === undefined ? '-' : e.scorePValue < 0.001 ? '< 0.001' : e.scorePValue.toFixed(3);
  const sp = e.successPValue === undefined ? '-' : e.successPValue < 0.001 ? '< 0.001' : e.successPValue.toFixed(3);
  return `Promotion gate${when}: ${e.decision} ${e.candidate} (${e.verdict} vs ${e.against}, ${e.games} paired games, ${e.kind === 'backend' ? 'tests passed' : 'similarity'} ${diff}, p ${p}; success McNemar p ${sp}; alpha ${e.alpha}).`;
}

/** The report's section on the last gate decision (Markdown). */
export function gateMarkdown(e: GateEvidence | null): string {
  if (!e) return '## Last promotion decision\n\nThe promotion gate has not run yet.\n';
  return ['## Last promotion decision', '', '```', formatGateEvidence(e), '```', ''].join('\n');
}
