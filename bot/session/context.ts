// What the engine's parts share: its settings and dependencies, the locks that order work on a session and on a
// person, database retries that tell the person to wait, and loading a session with its turns.
import type { Session, Task, Turn } from '../../prisma/generated/client.ts';
import { KeyedMutex } from '../locks.ts';
import { withDbRetry } from '../retry.ts';
import { ScoringPool } from './scoring.ts';
import type { EngineDeps, EngineOptions, Hooks } from './types.ts';

export type SessionWithTurns = Session & { task: Task; turns: Turn[] };

/** Answers scored at once unless the settings say otherwise: one per core of the 2-core machines this runs on. */
export const DEFAULT_SCORING_POOL = 2;
const TASK_CACHE_SIZE = 10_000;
/** How long a session handed over between two holders of its lock may be used (see EngineContext.locked). */
const HANDOVER_MS = 1_000;
const HANDOVER_LIMIT = 10_000;

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

  /**
   * A session as the last holder of its lock wrote it (the person's reply stored), for the next holder only (the
   * agent's step that answers it), within HANDOVER_MS: the step need not read again what was just written (two
   * round trips a reply; bench:bot, bench/RESULTS.md). Any other holder in between drops it (`locked`), so nothing this
   * process did meanwhile is missed; what another process writes in those few milliseconds is what it could
   * equally write while the agent writes, after any read.
   */
  private readonly handovers = new Map<string, { s: SessionWithTurns; at: number }>();

  /** Runs `fn` holding the session's lock, with the session handed over by the previous holder, if any (see handOver). */
  locked<T>(sessionId: string, fn: (handedOver: SessionWithTurns | undefined) => Promise<T>): Promise<T> {
    return this.sessionLock.run(sessionId, () => {
      const h = this.handovers.get(sessionId);
      this.handovers.delete(sessionId);
      return fn(h && performance.now() - h.at < HANDOVER_MS ? h.s : undefined);
    });
  }

  /** Leaves the session as just written (under its lock) to the lock's next holder (see locked). */
  handOver(s: SessionWithTurns): void {
    // Bounded: one left by a step that never came (the engine closing) is dropped with the rest.
    if (this.handovers.size >= HANDOVER_LIMIT) this.handovers.clear();
    this.handovers.set(s.id, { s, at: performance.now() });
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
   * A session with its turns and task: two queries. The task comes from a cache: task rows are never updated
   * (prisma/task-store.ts only inserts), and every turn loads its session (bench:bot's profile: database round
   * trips were the bot's largest cost). Its policy version is not loaded: the agent cache needs only its id
   * (agents.ts reads the row once, for a version not loaded yet).
   */
  async load(sessionId: string, hooks?: Hooks): Promise<SessionWithTurns | null> {
    const s = await this.retry(() => this.prisma.session.findUnique({ where: { id: sessionId }, include: { turns: { orderBy: { index: 'asc' } } } }), hooks);
    return s && { ...s, task: await this.task(s.taskId, hooks) };
  }

  /** Runs a write for a session; null (instead of the database's error) when the session no longer exists. */
  async storeUnlessGone<T>(sessionId: string, write: () => Promise<T>): Promise<T | null> {
    try {
      return await write();
    } catch (err) {
      const gone = await this.prisma.session.findUnique({ where: { id: sessionId }, select: { id: true } }).then((x) => !x, () => false);
      if (gone) return null;
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
