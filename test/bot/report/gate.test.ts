// The last promotion decision as /mod stats and the report show it: pure formatting of the gate's evidence.
import { describe, expect, it } from 'vitest';
import { gateMarkdown, gateStatsLine, parseGateEvidence } from '../../../bot/report/gate.ts';
import type { GateEvidence } from '../../../trainer/promote.ts';

const evidence: GateEvidence = {
  verdict: 'better',
  decision: 'deployed',
  candidate: 'sweet-1a2b3c4d',
  against: 'starter',
  kind: 'backend',
  games: 120,
  alpha: 0.05,
  margin: 0,
  candidateSuccess: 0.1,
  deployedSuccess: 0.05,
  candidateScore: 0.312,
  deployedScore: 0.254,
  scoreDifference: { estimate: 0.058, lo: 0.021, hi: 0.094, n: 120 },
  successDifference: { estimate: 0.05, lo: 0.008, hi: 0.092, n: 120 },
  scorePValue: 0.0042,
  successPValue: 0.0703,
  candidateOnlySuccesses: 9,
  deployedOnlySuccesses: 3,
  decidedAt: '2026-12-03T07:00:00.000Z',
};

describe('last gate decision', () => {
  it('one line for /mod stats: decision, verdict, games, difference and p-values', () => {
    expect(gateStatsLine(evidence)).toBe(
      'Promotion gate (2026-12-03 07:00 UTC): deployed sweet-1a2b3c4d (better vs starter, 120 paired games, tests passed +5.8 points, p 0.004; success McNemar p 0.070; alpha 0.05).',
    );
    expect(gateStatsLine(null)).toBe('Promotion gate: no decision yet.');
    expect(gateStatsLine({ ...evidence, verdict: 'nothing-deployed', against: null })).toMatch(/nothing was deployed/);
  });

  it('the report section carries the full evidence, with the (1 - 2 alpha) intervals', () => {
    const md = gateMarkdown(evidence);
    expect(md).toMatch(/^## Last promotion decision/);
    expect(md).toContain('deployed sweet-1a2b3c4d: better than the deployed version');
    expect(md).toContain(
      'tests passed: 31.2% vs 25.4%, difference +5.8 [+2.1, +9.4] points (90% interval), Wilcoxon p = 0.004',
    );
    expect(md).toContain('McNemar p = 0.070 (9 vs 3 discordant games)');
    expect(gateMarkdown(null)).toMatch(/has not run yet/);
  });

  it('reads evidence back from an audit-log detail, and ignores entries written before the gate kept evidence', () => {
    expect(parseGateEvidence(JSON.parse(JSON.stringify(evidence)))).toEqual(evidence);
    expect(parseGateEvidence({ candidate: 0.4, deployed: 0.3, margin: 0 })).toBeNull();
    expect(parseGateEvidence(null)).toBeNull();
  });
});
