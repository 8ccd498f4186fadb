// Simulated sessions: a policy version plays stored tasks against a simulated collaborator (the rule-based one,
// or the LLM one when configured), each game is evaluated like a human session, and, when asked, stored like
// one (Session.simulated = true, a simulated Participant, Turns, Evaluation, reward). Used for offline training
// data (`sweetloop simulate`) and for evaluation (`sweetloop evaluate`, the promotion gate, the benchmark).
import { checkpointOf } from '../prisma/policy-store.ts';
import type { Collaborator } from '../tasks/agent.ts';
import type { TaskContent, TaskKind, TaskSplit } from '../tasks/model.ts';
import { createRuleSimulator } from '../tasks/simulator.ts';
import type { PolicyVersion, PrismaClient } from '../prisma/generated/client.ts';
import { toTaskContent } from './data.ts';
import { playBatched, DEFAULT_SAMPLING, type SamplingOptions } from './rollout.ts';
import type { EvaluationOutcome, Scorer } from '../tasks/scorer.ts';
import { loadModel } from './sequences.ts';
import { storeSimulatedSession } from './store.ts';

export interface CollaboratorFactory {
  name: string;
  create(task: TaskContent): Collaborator;
}

export const RULE_SIMULATOR: CollaboratorFactory = { name: 'rule-simulator', create: (task) => createRuleSimulator(task) };

export interface SimulateOptions {
  kind: TaskKind;
  split: TaskSplit;
  episodes: number;
  seed: number;
  /** Store every game as a simulated session. */
  store: boolean;
  collaborator?: CollaboratorFactory;
  sampling?: SamplingOptions;
  parallel?: number;
  log?: (line: string) => void;
}

export interface SimulatedGame {
  taskId: string;
  sessionId: string | null;
  agentTurns: number;
  evaluation: EvaluationOutcome;
}

/** Tasks of a kind and split in a stable order (by content hash): episode i plays task i mod count. */
export async function storedTasks(prisma: PrismaClient, kind: TaskKind, split: TaskSplit): Promise<{ id: string; content: TaskContent }[]> {
  const rows = await prisma.task.findMany({ where: { kind, split }, orderBy: { contentHash: 'asc' } });
  return rows.map((r) => ({ id: r.id, content: toTaskContent(r) }));
}

export async function simulate(prisma: PrismaClient, version: PolicyVersion, scorer: Scorer, o: SimulateOptions): Promise<SimulatedGame[]> {
  if (!Number.isInteger(o.episodes) || o.episodes < 1) throw new Error(`episodes must be a positive integer, got ${o.episodes}`);
  const tasks = await storedTasks(prisma, o.kind, o.split);
  if (tasks.length === 0) throw new Error(`no ${o.kind} tasks in the ${o.split} split: import some first (sweetloop tasks import ...)`);
  const collaborator = o.collaborator ?? RULE_SIMULATOR;
  const policy = await loadModel(checkpointOf(version), `sim-${version.name}-${Date.now()}`, false);
  const games: SimulatedGame[] = new Array(o.episodes);
  const scoring: Promise<void>[] = [];
  let done = 0;
  try {
    const jobs = Array.from({ length: o.episodes }, (_, i) => ({ task: tasks[i % tasks.length]!.content, ref: tasks[i % tasks.length]!.id }));
    await playBatched(policy, jobs, {
      collaborator: (task) => collaborator.create(task),
      sampling: o.sampling ?? DEFAULT_SAMPLING,
      seed: o.seed,
      ...(o.parallel ? { parallel: o.parallel } : {}),
      onResult: (r, i) => {
        // Scored while the other games go on; stored once scored.
        scoring.push(
          (async () => {
            const evaluation = await scorer.evaluate(r.job.task, r.episode.answer);
            const sessionId = o.store
              ? await storeSimulatedSession(prisma, {
                  taskId: r.job.ref,
                  policyVersionId: version.id,
                  collaborator: collaborator.name,
                  turns: r.episode.turns,
                  answer: r.episode.answer,
                  endedBy: r.episode.endedBy,
                  evaluation,
                  startedAt: r.startedAt,
                  endedAt: r.endedAt,
                })
              : null;
            games[i] = { taskId: r.job.ref, sessionId, agentTurns: r.episode.turns.filter((t) => t.role === 'agent').length, evaluation };
            done++;
            if (o.log && (done % 10 === 0 || done === o.episodes)) o.log(`${version.name}: ${done}/${o.episodes} games scored`);
          })(),
        );
      },
    });
    await Promise.all(scoring);
  } finally {
    policy.model.dispose();
  }
  return games;
}
