// Paired evaluation: `comparePaired` (pure) on fixed outcomes, and `sweetloop evaluate --compare A B` end to end
// (the real binary, a real database, two tiny policies playing the same held-out games in the real sandbox).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { importTasks } from '../../prisma/task-store.ts';
import { generateMiniTasks } from '../../tasks/mini.ts';
import { comparePaired, formatComparison, type GameOutcome } from '../../trainer/evaluate.ts';
import { scratchDir, tinyPolicy } from './fixture.ts';
import { runSweetloop } from '../../testing/sweetloop-cli.ts';

const games = (scores: number[], prefix = 't'): GameOutcome[] =>
  scores.map((score, i) => ({ taskId: `${prefix}${i}`, score, success: score >= 1, agentTurns: 2 + (i % 3) }));

describe('comparePaired', () => {
  it('gives each policy its rates and the paired differences with McNemar and Wilcoxon p-values', () => {
    const a = games([1, 1, 1, 0.5, 0.4, 1, 0.9, 0.2]);
    const b = games([0, 0.5, 1, 0.5, 0.1, 0.3, 0.9, 0.2]);
    const c = comparePaired(
      { version: 'new', games: a },
      { version: 'old', games: b },
      { kind: 'backend', seed: 1, resamples: 2000 },
    );
    expect(c.games).toBe(8);
    expect([c.a.successes, c.b.successes]).toEqual([4, 1]);
    expect(c.a.success.estimate).toBe(0.5);
    // Discordant: games 0, 1, 5 succeed only for A -> McNemar 2 * P(Bin(3, 1/2) <= 0) = 0.25.
    expect([c.success.mcnemar.aOnly, c.success.mcnemar.bOnly]).toEqual([3, 0]);
    expect(c.success.mcnemar.pValue).toBeCloseTo(0.25, 12);
    expect(c.success.difference.estimate).toBeCloseTo(3 / 8, 12);
    // Score differences 1, 0.5, 0.7, 0.3 (4 non-zero, all positive): exact Wilcoxon p = 2/16.
    expect(c.score.wilcoxon.n).toBe(4);
    expect(c.score.wilcoxon.pValue).toBeCloseTo(0.125, 12);
    expect(c.score.difference.estimate).toBeCloseTo(2.5 / 8, 12);
    expect(c.score.difference.lo).toBeGreaterThanOrEqual(0);
    expect([c.winRate.wins, c.winRate.ties, c.winRate.losses]).toEqual([4, 4, 0]);
    const text = formatComparison(c);
    expect(text).toContain('new (A) vs old (B) on the same 8 backend games (95% intervals):');
    expect(text).toMatch(/p = 0\.250 McNemar\s+p = 0\.125 Wilcoxon/);
    expect(text).toContain('discordant games: A only 3, B only 0; 4 games with equal scores');
  });

  it('counts a task played several times once: intervals resample tasks, Wilcoxon ranks task means, McNemar is clustered', () => {
    // 4 tasks x 3 games. Task means of A - B: t0 +1/6, t1 +0.2, t2 0, t3 +0.1 -> 3 non-zero, all positive:
    // exact Wilcoxon p = 2/8 = 0.25 over tasks (over the 12 games it would be 2/2^8 = 0.0078).
    const rep = (scores: number[]): GameOutcome[] =>
      scores.map((score, i) => ({ taskId: `t${Math.floor(i / 3)}`, score, success: score >= 1, agentTurns: 2 }));
    const a = rep([1, 1, 0.5, 0.6, 0.6, 0.6, 0.3, 0.3, 0.3, 0.4, 0.4, 0.4]);
    const b = rep([0.5, 0.5, 1, 0.4, 0.4, 0.4, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3]);
    const c = comparePaired(
      { version: 'new', games: a },
      { version: 'old', games: b },
      { kind: 'backend', seed: 1, resamples: 2000 },
    );
    expect([c.games, c.tasks]).toEqual([12, 4]);
    expect(c.score.wilcoxon.n).toBe(3);
    expect(c.score.wilcoxon.zeros).toBe(1);
    expect(c.score.wilcoxon.pValue).toBeCloseTo(0.25, 12);
    expect(c.score.difference.estimate).toBeCloseTo(1.4 / 12, 12);
    // Successes: t0 has A-only twice and B-only once (sum +1), the rest none: X² = 1/1, p = 0.3173.
    expect(c.success.mcnemar.method).toBe('clustered');
    expect(c.success.mcnemar.pValue).toBeCloseTo(0.317311, 5);
    const text = formatComparison(c);
    expect(text).toContain('on the same 12 backend games of 4 tasks (intervals and tests over tasks)');
    expect(text).toContain('1 tasks with equal mean scores');
    expect(c.score.tasks).toEqual({ better: 3, worse: 0, equal: 1 });
    expect(text).toContain("tasks where A's mean score is higher: 3, lower: 0, equal: 1");
  });
});

describe('sweetloop evaluate --compare', () => {
  let t: TestDatabase;
  let root: string;
  const sweetloop = (args: string[]) =>
    runSweetloop(args, {
      env: { ...process.env, LOG_LEVEL: 'warn', DATABASE_URL: t.url, TFJS_BACKEND: 'wasm' },
      timeoutMs: 300_000,
    });

  beforeAll(async () => {
    t = await createTestDatabase();
    root = scratchDir('compare');
    await importTasks(t.prisma, generateMiniTasks({ seed: 4, count: 2, split: 'test' }));
    for (const [name, seed] of [
      ['tiny-a', 5],
      ['tiny-b', 9],
    ] as const) {
      const dir = await tinyPolicy(join(root, name), seed);
      await t.prisma.policyVersion.create({
        data: { name, algorithm: 'starter', checkpointPath: dir, checkpointSha256: 'x', status: 'candidate' },
      });
    }
  }, 240_000);

  afterAll(async () => {
    await t?.drop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('plays both versions on the same games and prints the paired table; JSON carries the same numbers', async () => {
    const r = await sweetloop(['evaluate', '--compare', 'tiny-a', 'tiny-b', '--episodes', '2', '--seed', '3']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('tiny-a (A) vs tiny-b (B) on the same 2 backend games (95% intervals):');
    expect(r.stdout).toMatch(/A - B\s+[+-]\d+\.\d/);
    expect(r.stdout).toMatch(/p-value\s+p = [01]\.\d{3} McNemar\s+p = [01]\.\d{3} Wilcoxon/);
    const json = JSON.parse(
      (await sweetloop(['evaluate', '--compare', 'tiny-a', 'tiny-b', '--episodes', '2', '--seed', '3', '--json']))
        .stdout,
    );
    expect(json.games).toBe(2);
    expect(json.a.version).toBe('tiny-a');
    // Same seed, same games: the second run printed the same numbers.
    expect(r.stdout).toContain(`${(json.a.score.estimate * 100).toFixed(1)}`);
  }, 600_000);

  it('refuses one version, or --compare with --policy, with exit 1 and a message', async () => {
    const one = await sweetloop(['evaluate', '--compare', 'tiny-a']);
    expect(one.code).toBe(1);
    expect(one.stderr).toMatch(/--compare needs exactly two versions, got 1/);
    const both = await sweetloop(['evaluate', '--compare', 'tiny-a', 'tiny-b', '--policy', 'tiny-a']);
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/either --compare A B or --policy/);
  }, 300_000);
});
