// What the engine's parts share: its settings and dependencies, the locks that order work on a session and on a
// person, database retries that tell the person to wait, and loading a session with its turns.
import type { DialogueTurn } from '../../tasks/protocol.ts';
import type { PolicyVersion, Session, Task, Turn } from '../../prisma/generated/client.ts';
import { KeyedMutex } from '../locks.ts';
import { withDbRetry } from '../retry.ts';
import { ScoringPool } from './scoring.ts';
import type { EngineDeps, EngineOptions, Hooks } from './types.ts';

export type SessionWithAll = Session & { task: Task; turns: Turn[]; policyVersion: PolicyVersion | null };

/** The dialogue turns of a session as the protocol sees them (system notices left out). */
export function dialogueTurns(turns: readonly Turn[]): DialogueTurn[] {
  return turns
    .filter((t) => t.role !== 'system')
    .sort((a, b) => a.index - b.index)
    .map((t) => ({ role: t.role as 'agent' | 'human', content: t.content }));
}

/** Answers scored at once unless the settings say otherwise: one per core of the 2-core machines this runs on. */
export const DEFAULT_SCORING_POOL = 2;
const TASK_CACHE_SIZE = 10_000;

export class EngineContext {
  /** Held while a session's turn is generated or stored: one writer per session. */
  readonly sessionLock = new KeyedMutex();
  /** Held while a person's session is started or stopped: one active session per person. */
  readonly personLock = new KeyedMutex();
  /** Where answers wait to be scored: at most `scoringPool` at once (default 2). */
  readonly scoring: ScoringPool;
  /** Set once the engine closes: a turn waiting for its agent's server gives up. */
  closing = false;
  /** Sessions a step is being taken for now (an advance, a person's message being stored): the sweep leaves them be. */
  private readonly attended = new Map<string, number>();

  constructor(
    readonly deps: EngineDeps,
    readonly options: EngineOptions,
  ) {
    this.scoring = new ScoringPool(options.scoringPool ?? DEFAULT_SCORING_POOL);
  }

  get prisma() {
    return this.deps.db.prisma;
  }

  /** Runs a database operation, retrying it through an outage (the hooks tell the person to wait). */
  retry<T>(fn: () => Promise<T>, hooks?: Hooks): Promise<T> {
    return withDbRetry(fn, {
      giveUpAfterMs: this.options.dbRetryMs ?? 15 * 60_000,
      onWaiting: (err) => {
        this.deps.log?.warn({ err: (err as Error).message }, 'database unreachable; retrying');
        return hooks?.onDbWaiting?.();
      },
      onRecovered: () => hooks?.onDbRecovered?.(),
    });
  }

  /** Is the agent working on this session right now (the person must wait for its message)? */
  isBusy(sessionId: string): boolean {
    return this.sessionLock.isBusy(sessionId);
  }

  /** Runs `fn` counted as work on the session (see isAttended); counted from the call on, before any await. */
  async attend<T>(sessionId: string, fn: () => Promise<T>): Promise<T> {
    this.attended.set(sessionId, (this.attended.get(sessionId) ?? 0) + 1);
    try {
      return await fn();
    } finally {
      const left = this.attended.get(sessionId)! - 1;
      if (left > 0) this.attended.set(sessionId, left);
      else this.attended.delete(sessionId);
    }
  }

  /** Is anyone taking a step for this session now (an advance, its lock held)? If not, what it owes waits on the sweep. */
  isAttended(sessionId: string): boolean {
    return this.attended.has(sessionId) || this.isBusy(sessionId);
  }

  /**
   * A session with its turns, policy version and task. The task comes from a cache: task rows are never updated
   * (prisma/task-store.ts only inserts), and every turn loads its session several times (bench:bot's profile:
   * database round trips were the bot's largest cost), so this saves one query a load.
   */
  async load(sessionId: string, hooks?: Hooks): Promise<SessionWithAll | null> {
    const s = await this.retry(() => this.prisma.session.findUnique({ where: { id: sessionId }, include: { turns: { orderBy: { index: 'asc' } }, policyVersion: true } }), hooks);
    return s && { ...s, task: await this.task(s.taskId, hooks) };
  }

  private readonly tasks = new Map<string, Task>();

  private async task(id: string, hooks?: Hooks): Promise<Task> {
    const cached = this.tasks.get(id);
    if (cached) return cached;
    const task = await this.retry(() => this.prisma.task.findUniqueOrThrow({ where: { id } }), hooks);
    // Bounded: a study of many thousand tasks starts over rather than growing without end.
    if (this.tasks.size >= TASK_CACHE_SIZE) this.tasks.clear();
    this.tasks.set(id, task);
    return task;
  }
}
