// The episodes of `sweetloop env serve` (trainer/env-server.ts): a ColBench game whose agent plays from elsewhere,
// one HTTP step a message. Each episode runs tasks/protocol.ts playEpisode, the one game loop the bot's simulations
// and the trainer use, with a relay agent whose reply is the next step's message: the rules of a turn (parsing, the
// answer marker, the turn limit, the collaborator's cap) are the protocol's, never restated here. An answer is
// scored by the scorer the trainer scores with (tasks/scorer.ts: the sandboxed backend tests), a few at a time.
// The task's hidden reference stays in this process: a step returns the collaborator's reply, or the score.
import { randomUUID } from 'node:crypto';
import pLimit from 'p-limit';
import type { AgentReply, ChatMessage, Collaborator } from '../tasks/agent.ts';
import type { TaskContent } from '../tasks/model.ts';
import {
  buildDialogue,
  checkAgentMessage,
  MAX_AGENT_TURNS,
  playEpisode,
  type Episode,
  type EpisodeTurn,
} from '../tasks/protocol.ts';
import type { EvaluationOutcome, Scorer } from '../tasks/scorer.ts';
import type { CollaboratorFactory } from './simulate.ts';

/** A request the service refuses: `status` is the HTTP status it answers with. */
export class EnvError extends Error {
  override name = 'EnvError';
  constructor(
    readonly status: number,
    message: string,
    /** Seconds, sent as Retry-After with a 429 or 503. */
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

export interface EnvLimits {
  /** Episodes open at once; a start beyond is refused (429). */
  maxEpisodes: number;
  /** Answers scored at once (the sandbox pool, SCORING_POOL_SIZE); the others wait in arrival order. */
  scoring: number;
  /** Answers waiting for a place beyond those being scored; more is refused (429). */
  maxScoringQueue: number;
  /** An episode without a step for this long is closed (its game aborted). */
  idleMs: number;
}

export const DEFAULT_ENV_LIMITS: EnvLimits = { maxEpisodes: 64, scoring: 2, maxScoringQueue: 64, idleMs: 30 * 60_000 };

/** What a step returns: the collaborator's reply while the game goes on, the score once the agent answered. */
export type StepResult =
  | { done: false; turn: number; reply: string; messages: ChatMessage[] }
  | { done: true; turn: number; answer: string; endReason: Episode['endReason']; evaluation: EvaluationOutcome };

interface Waiter<T> {
  promise: Promise<T>;
  resolve: (v: T) => void;
  reject: (e: unknown) => void;
}

function waiter<T>(): Waiter<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

/** One game in progress: the protocol's loop runs in the background and waits on the relay for each agent message. */
class RunningEpisode {
  readonly id = randomUUID();
  readonly abort = new AbortController();
  lastActive = Date.now();
  /** Set while a step is being played; a second step at once is refused. */
  busy = false;
  turns: EpisodeTurn[] = [];
  /** The game asked the relay for the agent's next message: resolved with its reply's resolver. */
  private asked: Waiter<Waiter<AgentReply>> = waiter();
  readonly finished: Promise<Episode>;

  constructor(
    readonly taskId: string,
    readonly task: TaskContent,
    readonly collaborator: string,
    create: (task: TaskContent) => Collaborator,
    readonly maxTurns: number,
  ) {
    const relay = {
      name: 'env-client',
      reply: (_dialogue: ChatMessage[], options?: { signal?: AbortSignal }): Promise<AgentReply> => {
        const reply = waiter<AgentReply>();
        options?.signal?.addEventListener('abort', () => reply.reject(options.signal!.reason), { once: true });
        this.asked.resolve(reply);
        return reply.promise;
      },
    };
    this.finished = playEpisode({
      task,
      agent: relay,
      collaborator: create(task),
      maxTurns,
      signal: this.abort.signal,
      onTurn: (turn) => void this.turns.push(turn),
    });
    this.finished.catch(() => undefined);
  }

  /** The dialogue the agent answers next (system prompt, task, the turns so far). */
  messages(): ChatMessage[] {
    return buildDialogue(this.task, this.turns, { maxTurns: this.maxTurns });
  }

  /** Hands `text` to the game as the agent's message; resolves when the game wants the next one, or has ended. */
  async play(text: string): Promise<{ ended: false } | { ended: true; episode: Episode }> {
    const reply = await Promise.race([this.asked.promise, this.finished.then(() => null)]);
    if (!reply) throw new EnvError(409, 'this episode has ended');
    this.asked = waiter();
    reply.resolve({ text });
    return Promise.race([
      this.asked.promise.then(() => ({ ended: false as const })),
      this.finished.then((episode) => ({ ended: true as const, episode })),
    ]);
  }
}

export interface EnvEpisodesOptions {
  scorer: Scorer;
  /** The collaborators an episode may ask for, by name (`builtin`, `llm`); `fallback` is used when none is named. */
  collaborators: Record<string, CollaboratorFactory>;
  fallback: string;
  limits?: Partial<EnvLimits>;
}

export interface StartedEpisode {
  episodeId: string;
  taskId: string;
  kind: TaskContent['kind'];
  collaborator: string;
  maxTurns: number;
  /** What the agent is shown first: the system prompt and the task's description. */
  messages: ChatMessage[];
}

/** The open episodes, bounded in number, and the scoring pool they share with direct scoring. */
export class EnvEpisodes {
  private readonly episodes = new Map<string, RunningEpisode>();
  /** Episodes started so far: each one's index is its collaborator's game (CollaboratorFactory.create). */
  private started = 0;
  private readonly limits: EnvLimits;
  private readonly scoring: ReturnType<typeof pLimit>;
  private readonly sweep: NodeJS.Timeout;
  private readonly scored = new Set<Promise<EvaluationOutcome>>();

  constructor(private readonly o: EnvEpisodesOptions) {
    this.limits = { ...DEFAULT_ENV_LIMITS, ...o.limits };
    if (!o.collaborators[o.fallback]) throw new Error(`no collaborator named ${o.fallback}`);
    this.scoring = pLimit(this.limits.scoring);
    this.sweep = setInterval(() => this.closeIdle(), Math.min(60_000, this.limits.idleMs)).unref();
  }

  get open(): number {
    return this.episodes.size;
  }

  get scoringLoad(): { running: number; queued: number } {
    return { running: this.scoring.activeCount, queued: this.scoring.pendingCount };
  }

  start(
    taskId: string,
    task: TaskContent,
    o: { collaborator?: string | undefined; maxTurns?: number | undefined } = {},
  ): StartedEpisode {
    const name = o.collaborator ?? this.o.fallback;
    const factory = this.o.collaborators[name];
    if (!factory)
      throw new EnvError(
        400,
        `no collaborator "${name}" here; this service offers ${Object.keys(this.o.collaborators).join(', ')}`,
      );
    const maxTurns = o.maxTurns ?? MAX_AGENT_TURNS;
    if (!Number.isInteger(maxTurns) || maxTurns < 1 || maxTurns > MAX_AGENT_TURNS)
      throw new EnvError(400, `max_turns must be a whole number from 1 to ${MAX_AGENT_TURNS}`);
    if (this.episodes.size >= this.limits.maxEpisodes) {
      throw new EnvError(
        429,
        `${this.episodes.size} episodes are open, the most this service holds: finish or close one (DELETE /v1/episodes/ID)`,
        5,
      );
    }
    const game = this.started++;
    const ep = new RunningEpisode(taskId, task, factory.name, (t) => factory.create(t, game), maxTurns);
    this.episodes.set(ep.id, ep);
    return { episodeId: ep.id, taskId, kind: task.kind, collaborator: factory.name, maxTurns, messages: ep.messages() };
  }

  /** The agent's next message: the collaborator's reply, or (an answer) the score, after which the episode is gone. */
  async step(id: string, text: string): Promise<StepResult> {
    const ep = this.episodes.get(id);
    if (!ep) throw new EnvError(404, `no open episode ${id} (finished, closed, idle too long, or never started)`);
    if (ep.busy)
      throw new EnvError(409, 'a step of this episode is still being played: send the next one after its reply');
    if (typeof text !== 'string' || text.trim() === '') throw new EnvError(400, 'the message is empty');
    try {
      checkAgentMessage(text, ep.task.kind);
    } catch (err) {
      throw new EnvError(413, (err as Error).message);
    }
    ep.busy = true;
    ep.lastActive = Date.now();
    try {
      const played = await ep.play(text).catch((err: Error) => {
        this.close(id);
        throw new EnvError(
          err.name === 'LlmSimulatorError' ? 502 : 500,
          `the collaborator failed, and the episode with it: ${err.message}`,
        );
      });
      const turn = ep.turns.filter((t) => t.role === 'agent').length;
      if (!played.ended)
        return { done: false, turn, reply: ep.turns[ep.turns.length - 1]!.content, messages: ep.messages() };
      this.episodes.delete(id);
      const evaluation = await this.score(ep.task, played.episode.answer, played.episode.turns);
      return { done: true, turn, answer: played.episode.answer, endReason: played.episode.endReason, evaluation };
    } finally {
      ep.busy = false;
      ep.lastActive = Date.now();
    }
  }

  /** Scores an answer with the scorer, in the pool; refused when too many already wait. */
  score(
    task: TaskContent,
    answer: string,
    turns?: readonly { role: string; content: string }[],
  ): Promise<EvaluationOutcome> {
    if (this.scoring.pendingCount >= this.limits.maxScoringQueue) {
      return Promise.reject(
        new EnvError(429, `${this.scoring.pendingCount} answers are waiting to be scored: try again shortly`, 2),
      );
    }
    const job = this.scoring(() => this.o.scorer.evaluate(task, answer, turns));
    this.scored.add(job);
    void job.catch(() => undefined).finally(() => this.scored.delete(job));
    return job;
  }

  /** Ends an episode without scoring it; false when none was open. */
  close(id: string): boolean {
    const ep = this.episodes.get(id);
    if (!ep) return false;
    this.episodes.delete(id);
    ep.abort.abort(new EnvError(410, 'the episode was closed'));
    return true;
  }

  private closeIdle(): void {
    const now = Date.now();
    for (const [id, ep] of this.episodes) if (!ep.busy && now - ep.lastActive > this.limits.idleMs) this.close(id);
  }

  /** Closes every episode and waits for the answers being scored. */
  async closeAll(): Promise<void> {
    clearInterval(this.sweep);
    for (const id of [...this.episodes.keys()]) this.close(id);
    await Promise.allSettled([...this.scored]);
  }
}
