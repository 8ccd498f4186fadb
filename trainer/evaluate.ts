// Offline evaluation of a policy version on held-out tasks with a simulated collaborator. Backend: mean share
// of tests passed (t interval) and success rate (Wilson interval). Frontend: mean similarity, and the win rate
// against another version on the same tasks (ties count half).
import type { PolicyVersion, PrismaClient } from '../prisma/generated/client.ts';
import { winRate, type WinRate } from '../tasks/similarity.ts';
import type { Scorer } from '../tasks/scorer.ts';
import { simulate, type SimulateOptions, type SimulatedGame } from './simulate.ts';
import { formatPercent, meanIntervalOf, wilsonCount, type Interval } from '../tasks/stats.ts';

export interface EvaluationReport {
  version: string;
  kind: SimulateOptions['kind'];
  episodes: number;
  /** Backend: fraction of tests passed; frontend: similarity. */
  score: Interval;
  success: Interval;
  successes: number;
  meanAgentTurns: number;
  /** Per game, in episode order (the same tasks for every version evaluated with the same options). */
  scores: number[];
  against?: { version: string; report: Omit<EvaluationReport, 'against'>; winRate: WinRate };
}

export function summarise(version: string, kind: SimulateOptions['kind'], games: readonly SimulatedGame[]): EvaluationReport {
  const scores = games.map((g) => g.evaluation.score);
  const successes = games.filter((g) => g.evaluation.success).length;
  return {
    version,
    kind,
    episodes: games.length,
    score: meanIntervalOf(scores),
    success: wilsonCount(successes, games.length),
    successes,
    meanAgentTurns: games.reduce((a, g) => a + g.agentTurns, 0) / Math.max(1, games.length),
    scores,
  };
}

export async function evaluateVersion(
  prisma: PrismaClient,
  version: PolicyVersion,
  scorer: Scorer,
  o: SimulateOptions,
  against?: PolicyVersion,
): Promise<EvaluationReport> {
  const report = summarise(version.name, o.kind, await simulate(prisma, version, scorer, o));
  if (against) {
    const other = summarise(against.name, o.kind, await simulate(prisma, against, scorer, o));
    report.against = { version: against.name, report: other, winRate: winRate(report.scores, other.scores) };
  }
  return report;
}

export function formatReport(r: EvaluationReport): string {
  const metric = r.kind === 'backend' ? '% tests passed' : 'similarity (%)';
  const lines = [
    `${r.version} on ${r.episodes} ${r.kind} games (95% intervals):`,
    `  ${metric}: ${formatPercent(r.score)}`,
    `  success rate: ${formatPercent(r.success)} (${r.successes}/${r.episodes})`,
    `  agent turns per game: ${r.meanAgentTurns.toFixed(2)}`,
  ];
  if (r.against) {
    const w = r.against.winRate;
    lines.push(
      `  against ${r.against.version}: its ${metric} ${formatPercent(r.against.report.score)}, success ${formatPercent(r.against.report.success)}`,
      `  win rate vs ${r.against.version}: ${(w.winRate * 100).toFixed(1)} [${(w.ci95[0] * 100).toFixed(1)}, ${(w.ci95[1] * 100).toFixed(1)}] (${w.wins} wins, ${w.ties} ties, ${w.losses} losses)`,
    );
  }
  return lines.join('\n');
}
