// A small but real training setup: a tiny policy (built by the starter recipe from expert dialogues, a few
// updates), ColBench-mini tasks in a throwaway database, and sessions played by the scripted expert (asks,
// usually succeeds) and the non-asking agent (guesses, usually fails), scored by the real sandboxed evaluator
// and stored as simulated sessions. Different rewards on the same task give the preference pairs.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { importTasks } from '../../prisma/task-store.ts';
import { createExpertAgent, createNonAskingAgent } from '../../tasks/expert.ts';
import { generateMiniTasks } from '../../tasks/mini.ts';
import { playEpisode } from '../../tasks/protocol.ts';
import { createRuleSimulator } from '../../tasks/simulator.ts';
import type { TaskRecord } from '../../tasks/model.ts';
import { initBackend } from '../../trainer/model/backend.ts';
import { buildStarterPolicy, expertDialogues } from '../../trainer/recipes/starter.ts';
import { createScorer } from '../../tasks/scorer.ts';
import { storeFinishedSession } from '../../prisma/finished-session-store.ts';

export async function tinyPolicy(dir: string, seed = 5): Promise<string> {
  await initBackend('wasm');
  await buildStarterPolicy({
    dir,
    seed,
    dialogues: await expertDialogues(seed, 10),
    copyDrillPhase: null,
    steps: 4,
    tokensPerStep: 1024,
    size: {
      vocabSize: 320,
      hiddenSize: 32,
      intermediateSize: 64,
      numLayers: 1,
      numHeads: 2,
      numKvHeads: 1,
      contextLength: 768,
    },
  });
  return dir;
}

export function scratchDir(label: string): string {
  return mkdtempSync(join(tmpdir(), `sweetloop-${label}-`));
}

/** Stores `taskCount` train tasks and, per task, one expert and one non-asking session. */
export async function seedSessions(
  prisma: PrismaClient,
  taskCount: number,
  seed = 11,
): Promise<{ tasks: TaskRecord[]; sessionIds: string[] }> {
  const tasks = generateMiniTasks({ seed, count: taskCount, split: 'train' });
  await importTasks(prisma, tasks);
  const rows = await prisma.task.findMany();
  const idOf = new Map(rows.map((r) => [r.externalId, r.id]));
  const scorer = createScorer();
  const sessionIds: string[] = [];
  try {
    for (const agent of [createExpertAgent({ tasks, name: 'expert' }), createNonAskingAgent({ tasks })]) {
      for (const task of tasks) {
        const startedAt = new Date();
        const episode = await playEpisode({ task, agent, collaborator: createRuleSimulator(task) });
        const evaluation = await scorer.evaluate(task, episode.answer);
        sessionIds.push(
          await storeFinishedSession(prisma, {
            taskId: idOf.get(task.externalId)!,
            policyVersionId: null,
            collaborator: 'rule-simulator',
            channel: 'simulated',
            turns: episode.turns,
            answer: episode.answer,
            endReason: episode.endReason,
            evaluation,
            startedAt,
            endedAt: new Date(),
          }),
        );
      }
    }
  } finally {
    await scorer.close();
  }
  return { tasks, sessionIds };
}

export interface RunWorld {
  t: TestDatabase;
  root: string;
  policyDir: string;
  /** The deployed tiny policy version that runs start from. */
  fromId: string;
}

/** A fresh database with 4 tasks' worth of scored sessions and a deployed tiny policy to train from. */
export async function runWorld(label: string): Promise<RunWorld> {
  const t = await createTestDatabase();
  const root = scratchDir(label);
  const policyDir = await tinyPolicy(join(root, 'tiny'));
  await seedSessions(t.prisma, 4);
  const v = await t.prisma.policyVersion.create({
    data: {
      name: 'tiny',
      algorithm: 'starter',
      checkpointPath: policyDir,
      checkpointSha256: 'x',
      status: 'deployed',
      deployedAt: new Date(),
    },
  });
  return { t, root, policyDir, fromId: v.id };
}
