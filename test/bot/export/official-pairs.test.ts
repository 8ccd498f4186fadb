// A study's sweet-rl export with k = 3, read by the official pipeline's own code: official_pairs.py calls
// facebookresearch/sweet_rl's scripts/evaluate_code.py `main` (from a checkout named by SWEET_RL_DIR; nothing of
// it is in this repository) on the export and counts the critic's preference pairs it forms per task. The rule it
// applies, read at the commit in bot/export/sweet-rl.ts REFERENCE_COMMITS: a task whose best of k rewards is a
// success (>= 1) gives one pair per trajectory scored strictly below that best one, all with the best as chosen; a
// task without a success gives none. Runs only where SWEET_RL_DIR is set (and python3 with numpy): on other
// machines it is skipped, by name.
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { exportSessions } from '../../../bot/export/export.ts';
import { builtinTasks } from '../../../tasks/library.ts';
import { importTasks } from '../../../prisma/task-store.ts';
import { acceptConsent } from '../../../prisma/participant-store.ts';
import { appendAgentTurn, appendHumanTurn, createSession } from '../../../prisma/session-store.ts';
import { recordEvaluation } from '../../../prisma/evaluation-store.ts';
import { createStudy, findStudy } from '../../../prisma/study-store.ts';
import { studyProgress } from '../../../bot/study-progress.ts';

const SWEET_RL_DIR = process.env.SWEET_RL_DIR;
const SCRIPT = resolve(import.meta.dirname, 'official_pairs.py');

/** Rewards of each task's three sessions, in the study's order of tasks. */
const REWARDS = [
  [1, 0, 0.5], // a success: 2 pairs (both others below it)
  [0.4, 0.4, 0.4], // no success: none
  [1, 1, 0], // two successes: the first is chosen, only the failure is rejected: 1 pair
  [0.5, 0.2, 0.9], // rewards differ but nothing succeeded: none
];

describe.runIf(SWEET_RL_DIR)(
  'the official pipeline on a study export with k = 3 (runs only with SWEET_RL_DIR set)',
  () => {
    let t: TestDatabase;
    let dir: string;

    beforeAll(async () => {
      t = await createTestDatabase();
      dir = await mkdtemp(join(tmpdir(), 'sweetloop-official-pairs-'));
      await importTasks(t.prisma, builtinTasks({ kind: 'backend', split: 'train' }).slice(0, REWARDS.length));
      const pv = await t.prisma.policyVersion.create({
        data: { name: 'arm', algorithm: 'external', checkpointPath: '/x', checkpointSha256: '0' },
      });
      const study = await createStudy(
        t.prisma,
        'cli',
        {
          name: 'k3',
          kind: 'backend',
          split: 'train',
          perTask: 3,
          seed: 2,
          taskIds: (await t.prisma.task.findMany()).map((x) => x.id),
          arms: [{ policyVersionId: pv.id, share: 100 }],
          consentText: null,
          payPerSessionCents: null,
          bonusSuccessCents: null,
          currency: null,
          maxSessionsPerPerson: null,
          opensAt: null,
          closesAt: null,
          guildIds: [],
          channelIds: [],
        },
        { requireConsent: false },
      );
      const pool = (
        await t.prisma.studyTask.findMany({ where: { studyId: study.id }, orderBy: { position: 'asc' } })
      ).map((x) => x.taskId);
      let n = 0;
      for (const [task, rewards] of REWARDS.entries()) {
        for (const score of rewards) {
          const p = await acceptConsent(t.prisma, `95000000000000${String(n++).padStart(4, '0')}`, 'someone');
          const s = await createSession(t.prisma, {
            taskId: pool[task]!,
            participantId: p.id,
            policyVersionId: pv.id,
            channel: 'discord',
            simulated: false,
            studyId: study.id,
          });
          await appendAgentTurn(t.prisma, s.id, { content: 'Which inputs matter?', rawOutput: 'Which inputs matter?' });
          await appendHumanTurn(t.prisma, s.id, { content: `Person ${n} says: the usual ones.` });
          const answer = `def f():\n    return ${n}`;
          await appendAgentTurn(
            t.prisma,
            s.id,
            { content: `I WANT TO ANSWER:\n${answer}`, rawOutput: `I WANT TO ANSWER:\n${answer}` },
            { answer, endReason: 'answered' },
          );
          await recordEvaluation(
            t.prisma,
            s.id,
            { score, success: score === 1, detail: {}, evaluatorVersion: 'test' },
            0,
          );
        }
      }
    }, 120_000);

    afterAll(async () => {
      await t?.drop();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it('forms, per task, one pair per trajectory below a successful best one, and none on a task without a success', async () => {
      const path = join(dir, 'k3.jsonl');
      const r = await exportSessions(t.prisma, { format: 'sweet-rl', salt: 'official-pairs-salt', study: 'k3' }, path);
      expect(r.sessions).toBe(12);
      const out = JSON.parse(execFileSync('python3', [SCRIPT, SWEET_RL_DIR!, path, '3'], { encoding: 'utf8' })) as {
        trajectories: number;
        k: number;
        tasks: number;
        pairs: number;
        pairs_per_task: number[];
        rewards_per_task: number[][];
      };
      expect(out).toMatchObject({ trajectories: 12, k: 3, tasks: 4 });
      // The export's blocks keep the study's order of tasks (each task's first session started in that order).
      expect(out.rewards_per_task).toEqual(REWARDS);
      expect(out.pairs_per_task).toEqual([2, 0, 1, 0]);
      expect(out.pairs).toBe(3);
      // Sweetloop's own critic (and `study show`) also pairs the best against each lower reward where nothing
      // succeeded (docs/training.md, deliberate differences): 2 + 0 + 1 + 2.
      expect((await studyProgress(t.prisma, (await findStudy(t.prisma, 'k3'))!)).criticPairs).toBe(5);
    });
  },
);
