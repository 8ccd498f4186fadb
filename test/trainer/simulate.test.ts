// `simulate` plays a policy version against the rule-based collaborator on stored tasks, scores each game with
// the real sandboxed evaluator, and stores it as a simulated session with each agent turn's exact tokens;
// `evaluateVersion` reports intervals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { importTasks } from '../../prisma/task-store.ts';
import { generateMiniTasks } from '../../tasks/mini.ts';
import { createScorer } from '../../tasks/scorer.ts';
import { simulate } from '../../trainer/simulate.ts';
import { evaluateVersion } from '../../trainer/evaluate.ts';
import { scratchDir, tinyPolicy } from './fixture.ts';

let t: TestDatabase;
let root: string;
let policyDir: string;

beforeAll(async () => {
  t = await createTestDatabase();
  root = scratchDir('simulate');
  policyDir = await tinyPolicy(join(root, 'tiny'), 4);
  await importTasks(t.prisma, generateMiniTasks({ seed: 8, count: 3, split: 'test' }));
}, 240_000);

afterAll(async () => {
  await t?.drop();
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('simulated sessions', () => {
  it('are stored like human ones, marked simulated, with turns, evaluation and reward', async () => {
    const v = await t.prisma.policyVersion.create({
      data: { name: 'tiny', algorithm: 'starter', checkpointPath: policyDir, checkpointSha256: 'x' },
    });
    const scorer = createScorer();
    // Each game's turns reach the scorer (a family may score the game, not only the answer: tasks/credit.ts v2).
    const turnsSeen: number[] = [];
    const watching: typeof scorer = {
      evaluate: (task, answer, turns) => (turnsSeen.push(turns?.length ?? -1), scorer.evaluate(task, answer, turns)),
      close: () => scorer.close(),
    };
    try {
      const games = await simulate(t.prisma, v, watching, {
        kind: 'backend',
        split: 'test',
        episodes: 4,
        seed: 1,
        store: true,
        sampling: { temperature: 1, topP: 1, maxTokens: 24 },
      });
      expect(games).toHaveLength(4);
      expect(turnsSeen.sort()).toEqual(games.map((g) => g.turns.length).sort());
      expect(Math.min(...turnsSeen)).toBeGreaterThan(0);
      const sessions = await t.prisma.session.findMany({
        include: { turns: { include: { tokens: true } }, evaluation: true, participant: true },
      });
      expect(sessions).toHaveLength(4);
      for (const s of sessions) {
        expect(s.simulated).toBe(true);
        expect(s.channel).toBe('simulated');
        expect(s.status).toBe('answered');
        expect(s.policyVersionId).toBe(v.id);
        expect(s.participant.role).toBe('simulated');
        expect(s.turns.length).toBeGreaterThanOrEqual(1);
        expect(s.turns.filter((x) => x.role === 'agent').length).toBe(s.turnCount);
        expect(s.evaluation).not.toBeNull();
        expect(s.evaluation!.testsTotal).toBeGreaterThan(0);
        expect(s.reward).toBe(s.evaluation!.score);
        // Every agent turn with its exact tokens (in-process tfjs), stored once: the provenance only says so.
        for (const turn of s.turns.filter((x) => x.role === 'agent')) {
          expect(turn.provenance).toMatchObject({
            engine: 'tfjs',
            servedModel: 'tiny',
            tokens: 'recorded',
            logprobs: null,
          });
          expect(turn.tokens).toMatchObject({ weightsVersion: 'tiny@sha256:x' });
          expect(turn.tokens!.ids).toHaveLength(turn.completionTokens!);
          expect(turn.tokens!.logprobs).toHaveLength(turn.completionTokens!);
          for (const l of turn.tokens!.logprobs) expect(l).toBeLessThanOrEqual(0);
        }
      }
      // Four games over three tasks: the first task is played twice.
      expect(new Set(sessions.map((s) => s.taskId)).size).toBe(3);

      const report = await evaluateVersion(
        t.prisma,
        v,
        scorer,
        {
          kind: 'backend',
          split: 'test',
          episodes: 3,
          seed: 1,
          store: false,
          sampling: { temperature: 1, topP: 1, maxTokens: 24 },
        },
        v,
      );
      expect(report.episodes).toBe(3);
      expect(report.success.lo).toBeLessThanOrEqual(report.success.estimate);
      expect(report.against!.winRate.n).toBe(3);
      // Nothing more was stored by the evaluation.
      expect(await t.prisma.session.count()).toBe(4);
    } finally {
      await scorer.close();
    }
  }, 600_000);
});
