// Simulated sessions: a policy version plays stored tasks against a simulated collaborator (the rule-based one,
// or the LLM one when configured), each game is evaluated like a human session, and, when asked, stored like
// one (Session.simulated = true, a simulated Participant, Turns, Evaluation, reward). Used for offline training
// data (`sweetloop simulate`) and for evaluation (`sweetloop evaluate`, the promotion gate, the benchmark).
// Checkpoint versions play in-process in batches (rollout.ts), their stored turns with their exact tokens; endpoint
// and adapter versions play through their agent (trainer/policies/agent-for.ts), several games at once. Turns are
// stored with provenance.
import { checkpointOf } from '../prisma/policy-store.ts';
import pLimit from 'p-limit';
import { AgentUnavailableError, ownWeightsVersion, type Agent, type Collaborator } from '../tasks/agent.ts';
import { playEpisode, type EpisodeTurn } from '../tasks/protocol.ts';
import type { TaskContent, TaskKind, TaskSource, TaskSplit } from '../tasks/model.ts';
import { createRuleSimulator } from '../tasks/simulator.ts';
import { gameSeed } from '../tasks/random.ts';
import type { PolicyVersion, PrismaClient } from '../prisma/generated/client.ts';
import { taskContent } from '../prisma/task-store.ts';
import { playBatched, DEFAULT_SAMPLING, type RolloutJob, type RolloutResult, type SamplingOptions } from './rollout.ts';
import type { EvaluationOutcome, Scorer } from '../tasks/scorer.ts';
import { loadModel } from './sequences.ts';
import { storeFinishedSession } from '../prisma/finished-session-store.ts';

export interface CollaboratorFactory {
  name: string;
  /**
   * The collaborator of one game. `game`: the game's index in its run (job i), so that a collaborator with random
   * parts (tasks/credit.ts creditGameBudget) meets game i of every policy the same way (common random numbers).
   */
  create(task: TaskContent, game: number): Collaborator;
}

export const RULE_SIMULATOR: CollaboratorFactory = {
  name: 'rule-simulator',
  create: (task) => createRuleSimulator(task),
};

export interface SimulateOptions {
  kind: TaskKind;
  split: TaskSplit;
  episodes: number;
  seed: number;
  /** Store every game as a simulated session. */
  store: boolean;
  collaborator?: CollaboratorFactory;
  /** Play these tasks (game i plays tasks[i mod count]) instead of the stored tasks of `kind` and `split`. */
  tasks?: readonly { id: string; content: TaskContent }[];
  /** Only stored tasks of this source (ColBench-mini's are `generated`). */
  source?: TaskSource;
  /**
   * Games a task, played in a row: game i plays task floor(i / perTask). Training pairs come from two games of one
   * task with different rewards, so data meant for training needs more than one. Unset: one game a task in turn.
   */
  perTask?: number;
  sampling?: SamplingOptions;
  parallel?: number;
  log?: (line: string) => void;
}

export interface SimulatedGame {
  taskId: string;
  sessionId: string | null;
  agentTurns: number;
  evaluation: EvaluationOutcome;
  /** The dialogue as played (read by bot/report/calibration.ts). */
  turns: EpisodeTurn[];
}

/** Tasks of a kind and split in a stable order (by content hash): episode i plays task i mod count. */
export async function storedTasks(
  prisma: PrismaClient,
  kind: TaskKind,
  split: TaskSplit,
  source?: TaskSource,
): Promise<{ id: string; content: TaskContent }[]> {
  const rows = await prisma.task.findMany({
    where: { kind, split, ...(source ? { source } : {}) },
    orderBy: { contentHash: 'asc' },
  });
  return rows.map((r) => ({ id: r.id, content: taskContent(r) }));
}

export async function simulate(
  prisma: PrismaClient,
  version: PolicyVersion,
  scorer: Scorer,
  o: SimulateOptions,
): Promise<SimulatedGame[]> {
  if (!Number.isInteger(o.episodes) || o.episodes < 1)
    throw new Error(`episodes must be a positive integer, got ${o.episodes}`);
  if (o.perTask !== undefined && !(Number.isInteger(o.perTask) && o.perTask >= 1))
    throw new Error(`perTask must be a positive integer, got ${o.perTask}`);
  const tasks = o.tasks ?? (await storedTasks(prisma, o.kind, o.split, o.source));
  if (tasks.length === 0)
    throw new Error(
      o.tasks
        ? 'no tasks to play'
        : `no ${o.source ? `${o.source} ` : ''}${o.kind} tasks in the ${o.split} split: ${o.source === 'generated' ? 'store ColBench-mini tasks first (sweetloop tasks seed --mini 10)' : 'import some first (sweetloop tasks import ...)'}`,
    );
  const collaborator = o.collaborator ?? RULE_SIMULATOR;
  const taskOf = (i: number) => tasks[Math.floor(i / (o.perTask ?? 1)) % tasks.length]!;
  const jobs = Array.from({ length: o.episodes }, (_, i) => ({ task: taskOf(i).content, ref: taskOf(i).id }));
  const games: SimulatedGame[] = new Array(o.episodes);
  const scoring: Promise<void>[] = [];
  let done = 0;
  // Scored while the other games go on; stored once scored.
  const onResult = (r: RolloutResult, i: number) => {
    const scored = (async () => {
      const evaluation = await scorer.evaluate(r.job.task, r.episode.answer, r.episode.turns);
      const sessionId = o.store
        ? await storeFinishedSession(prisma, {
            taskId: r.job.ref,
            policyVersionId: version.id,
            collaborator: collaborator.name,
            channel: 'simulated',
            turns: r.episode.turns.map((t) =>
              t.provenance ? { ...t, latencyMs: Math.round(t.provenance.latencyMs) } : t,
            ),
            answer: r.episode.answer,
            endReason: r.episode.endReason,
            evaluation,
            startedAt: r.startedAt,
            endedAt: r.endedAt,
          })
        : null;
      games[i] = {
        taskId: r.job.ref,
        sessionId,
        agentTurns: r.episode.turns.filter((t) => t.role === 'agent').length,
        evaluation,
        turns: r.episode.turns,
      };
      done++;
      if (o.log && (done % 10 === 0 || done === o.episodes))
        o.log(`${version.name}: ${done}/${o.episodes} games scored`);
    })();
    // Awaited below with the others; until then a failed score (no sandbox, say) must not be an unhandled
    // rejection, which ends the whole process (the trainer service) instead of failing this call.
    scored.catch(() => undefined);
    scoring.push(scored);
  };

  if (version.kind === 'checkpoint') {
    // In-process checkpoints: the replies of many games share one batched generation.
    const policy = await loadModel(checkpointOf(version), `sim-${version.name}-${Date.now()}`, false);
    try {
      await playBatched(policy, jobs, {
        collaborator: (task, game) => collaborator.create(task, game),
        sampling: o.sampling ?? DEFAULT_SAMPLING,
        seed: o.seed,
        ...(o.parallel ? { parallel: o.parallel } : {}),
        onResult,
        ...(o.store
          ? {
              provenance: {
                name: version.name,
                weightsVersion: ownWeightsVersion(version.name, version.checkpointSha256),
              },
            }
          : {}),
      });
    } finally {
      policy.model.dispose();
    }
  } else {
    // Served versions: the server batches; we keep a few games talking to it at once.
    await playThroughAgent(prisma, version, jobs, { ...o, collaborator, onResult });
  }
  // Every game's scoring settles before an error is reported, so nothing is left writing in the background.
  const settled = await Promise.allSettled(scoring);
  const failed = settled.find((x): x is PromiseRejectedResult => x.status === 'rejected');
  if (failed) throw failed.reason;
  return games;
}

/** How long a game waits, in all, for a server that is down before the run gives up (ms). */
const UNAVAILABLE_PATIENCE_MS = 10 * 60_000;

/**
 * Plays each job with tasks/protocol.ts playEpisode against the version's agent (trainer/policies/agent-for.ts),
 * `parallel` games at a time (default 4). Game i samples with gameSeed(seed, i) (tasks/random.ts), so a run is
 * reproducible on servers that honour seeds whatever the interleaving. A server that is down is waited for (its Retry-After, else 5 s)
 * up to UNAVAILABLE_PATIENCE_MS per game; the turn is then asked again, so no game is lost to an outage.
 */
async function playThroughAgent(
  prisma: PrismaClient,
  version: PolicyVersion,
  jobs: readonly RolloutJob[],
  o: SimulateOptions & { collaborator: CollaboratorFactory; onResult: (r: RolloutResult, i: number) => void },
): Promise<void> {
  const { loadAgent } = await import('./policies/agent-for.ts');
  const agent = await loadAgent(version, { prisma, seed: o.seed, ...(o.sampling ? { sampling: o.sampling } : {}) });
  const limit = pLimit(Math.max(1, o.parallel ?? 4));
  try {
    const results = await Promise.allSettled(
      jobs.map((job, i) =>
        limit(async () => {
          const seeded = agent.withSeed ? agent.withSeed(gameSeed(o.seed, i)) : agent;
          const startedAt = new Date();
          const episode = await playEpisode({
            task: job.task,
            agent: patient(seeded, o.log),
            collaborator: o.collaborator.create(job.task, i),
          });
          o.onResult({ job, episode, startedAt, endedAt: new Date() }, i);
        }),
      ),
    );
    const failed = results.find((x): x is PromiseRejectedResult => x.status === 'rejected');
    if (failed) throw failed.reason;
  } finally {
    await agent.close();
  }
}

/** The agent, waiting out AgentUnavailableError (a server restarting, overloaded) instead of losing the game. */
function patient(agent: Agent, log?: (line: string) => void): Agent {
  return {
    name: agent.name,
    async reply(dialogue, options) {
      const giveUpAt = Date.now() + UNAVAILABLE_PATIENCE_MS;
      for (;;) {
        try {
          return await agent.reply(dialogue, options);
        } catch (err) {
          if (!(err instanceof AgentUnavailableError) || Date.now() >= giveUpAt) throw err;
          const wait = Math.min(Math.max(err.retryAfterMs ?? 5_000, 1_000), 60_000);
          log?.(`${agent.name}: ${err.message}; asking again in ${Math.round(wait / 1000)} s`);
          await new Promise((r) => setTimeout(r, wait));
          options?.signal?.throwIfAborted();
        }
      }
    },
  };
}
