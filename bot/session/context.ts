// What the engine's parts share: its settings and dependencies, the locks that order work on a session and on a
// person, database retries that tell the person to wait, and loading a session with its turns.
import type { Task, Turn } from '../../prisma/generated/client.ts';
import { KeyedMutex } from '../locks.ts';
import { withDbRetry } from '../retry.ts';
import { endSession } from '../../prisma/session-store.ts';
import { AdmissionDirectory } from './directory.ts';
import { SessionCache, type SessionWithTurns } from './session-cache.ts';
import { ScoringPool } from './scoring.ts';
import type { EngineDeps, EngineOptions, Hooks } from './types.ts';

export type { SessionWithTurns } from './session-cache.ts';

/** Answers scored at once unless the settings say otherwise: one per core of the 2-core machines this runs on. */
export const DEFAULT_SCORING_POOL = 2;
const TASK_CACHE_SIZE = 10_000;

export class EngineContext {
  /** Held while a session's turn is generated or stored: one writer per session. */
  readonly sessionLock = new KeyedMutex();
  /** Held while a person's session is started or stopped: one active session per person. */
  readonly personLock = new KeyedMutex();
  /**
   * Held while a task is assigned in a study, around the study's database lock (prisma/study-store.ts
   * withStudyLock): assignments in a study run one at a time anyway, and queued here they wait without holding a
   * connection of the pool (200 people starting at once held all 20 waiting on that lock, and every turn waited
   * for a connection behind them: bench:bot, bench/RESULTS.md).
   */
  readonly studyLock = new KeyedMutex();
  /** Where answers wait to be scored: at most `scoringPool` at once (default 2). */
  readonly scoring: ScoringPool;
  /** What admissions read that moderators change rarely, kept while it is unchanged (directory.ts). */
  readonly directory = new AdmissionDirectory(() => this.prisma);
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

  /** Each session's state as this process last read or wrote it (session-cache.ts). */
  readonly sessions = new SessionCache();

  /** Runs `fn` holding the session's lock: one writer per session in this process. */
  locked<T>(sessionId: string, fn: () => Promise<T>): Promise<T> {
    return this.sessionLock.run(sessionId, fn);
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
   * A session with its turns and task: from memory when this process has it (session-cache.ts), else two queries,
   * kept. The task comes from a cache too: task rows are never updated (prisma/task-store.ts only inserts), and
   * every turn loads its session (bench:bot's profile: database round trips were the bot's largest cost). Its
   * policy version is not loaded: the agent cache needs only its id (agents.ts reads the row once, for a version
   * not loaded yet).
   */
  async load(sessionId: string, hooks?: Hooks): Promise<SessionWithTurns | null> {
    const cached = this.sessions.get(sessionId);
    if (cached) return cached;
    const readAt = this.sessions.readAt();
    const s = await this.retry(
      () =>
        this.prisma.session.findUnique({ where: { id: sessionId }, include: { turns: { orderBy: { index: 'asc' } } } }),
      hooks,
    );
    if (!s) return null;
    return this.sessions.keepRead({ ...s, task: await this.task(s.taskId, hooks) }, readAt);
  }

  /** Ends an active session without an answer (prisma/session-store.ts endSession) and drops its copy; false when it was no longer active. */
  async endSession(
    sessionId: string,
    status: 'abandoned' | 'expired',
    reason: string,
    hooks?: Hooks,
    at?: Date,
    onlyIfIdleSince?: Date,
  ): Promise<boolean> {
    try {
      return await this.retry(() => endSession(this.prisma, sessionId, status, reason, at, onlyIfIdleSince), hooks);
    } finally {
      this.sessions.forget(sessionId);
    }
  }

  /**
   * Appends a turn (`write`, prisma/session-store.ts, which appends only to an active session); null, with the
   * session's copy dropped, when the session is gone or no longer active (ended by another process meanwhile).
   */
  async appendTurn(sessionId: string, write: () => Promise<Turn>, hooks?: Hooks): Promise<Turn | null> {
    try {
      return await this.retry(write, hooks);
    } catch (err) {
      this.sessions.forget(sessionId);
      if ((err as { code?: string }).code === 'P2025') return null;
      throw err;
    }
  }

  private readonly tasks = new Map<string, Task>();

  /** A task by id, from the cache (see load). */
  async task(id: string, hooks?: Hooks): Promise<Task> {
    const cached = this.tasks.get(id);
    if (cached) return cached;
    const task = await this.retry(() => this.prisma.task.findUniqueOrThrow({ where: { id } }), hooks);
    // Bounded: a study of many thousand tasks starts over rather than growing without end.
    if (this.tasks.size >= TASK_CACHE_SIZE) this.tasks.clear();
    this.tasks.set(id, task);
    return task;
  }
}
