// What nobody is working on: a session owes a step (the agent's turn, showing it, the result or the rating prompt)
// and no advance, lock or restart is taking it, e.g. after a turn's post failed or a background step died. Such a
// step is overdue once it has waited `overdueMs`; readiness and /metrics count it, and the sweep hands it back to
// the channel to advance, so that no session stays silent for good.
import type { EngineContext } from './context.ts';
import type { Recovery } from './recovery.ts';
import type { PendingWork } from './types.ts';

/** The longest the sweep waits before trying a session again whose step it could not get done (its n-th try: 2^n sweeps). */
const MAX_BACKOFF_SWEEPS = 64;
const DEFAULT_OVERDUE_MS = 30_000;

export class Sweep {
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  /** The time between sweeps, the unit of a session's back-off (until start(): the overdue time). */
  private everyMs: number;
  /** Sessions the sweep handed over, by the activity it saw then: a session that moved on is tried afresh. */
  private readonly tried = new Map<string, { at: number; tries: number; nextAt: number }>();

  constructor(
    private readonly ctx: EngineContext,
    private readonly recovery: Recovery,
  ) {
    this.everyMs = ctx.options.overdueMs ?? DEFAULT_OVERDUE_MS;
  }

  /**
   * What is overdue now: owed for at least `overdueMs` with nobody working on it, and for less than the idle time
   * (an active session is expired then; an answered one's person is gone, and the sweep gives up on it).
   */
  async overdue(now = Date.now()): Promise<PendingWork[]> {
    return (await this.recovery.pendingWork()).filter((w) => this.age(w, now) === 'overdue');
  }

  private age(w: PendingWork, now: number): 'fresh' | 'overdue' | 'stale' {
    const waited = now - w.session.lastActivityAt.getTime();
    if (this.ctx.isAttended(w.session.id) || waited < (this.ctx.options.overdueMs ?? DEFAULT_OVERDUE_MS))
      return 'fresh';
    return waited < this.ctx.options.idleMinutes * 60_000 ? 'overdue' : 'stale';
  }

  /**
   * Hands what is overdue to `advance` (a session it could not get done is tried again after 1, 2, 4... sweeps),
   * synchronously after the last look at who works on what, so that nothing starts on a session in between.
   * Returns what it handed over; a sweep still running when the next is due makes that one skip.
   */
  async sweep(advance: (work: PendingWork[]) => void, now = Date.now()): Promise<PendingWork[]> {
    if (this.running) return [];
    this.running = true;
    const log = this.ctx.deps.log;
    try {
      const pending = await this.recovery.pendingWork();
      const due: PendingWork[] = [];
      for (const w of pending) {
        const id = w.session.id;
        const age = this.age(w, now);
        const at = w.session.lastActivityAt.getTime();
        const before = this.tried.get(id);
        if (before && before.at !== at) this.tried.delete(id);
        if (age === 'stale' && this.tried.delete(id)) {
          log?.warn(
            { session: id, kind: w.kind, tries: before!.tries },
            'sweep gives up: the session was not finished within the idle time',
          );
        }
        if (age !== 'overdue') continue;
        const t = this.tried.get(id);
        if (t && now < t.nextAt) continue;
        const tries = (t?.tries ?? 0) + 1;
        this.tried.set(id, { at, tries, nextAt: now + this.everyMs * Math.min(2 ** (tries - 1), MAX_BACKOFF_SWEEPS) });
        log?.debug({ session: id, kind: w.kind, overdueMs: now - at, try: tries }, 'sweep picks up an overdue session');
        due.push(w);
      }
      const owing = new Set(pending.map((w) => w.session.id));
      for (const id of this.tried.keys()) if (!owing.has(id)) this.tried.delete(id);
      log?.debug({ pending: pending.length, overdue: due.length }, 'sweep');
      if (due.length) advance(due);
      return due;
    } finally {
      this.running = false;
    }
  }

  /** Sweeps every `everyMs`, handing what is overdue to `advance` (the channel shows it, see SessionEngine.resume). */
  start(everyMs: number, advance: (work: PendingWork[]) => void): void {
    this.stop();
    this.everyMs = everyMs;
    this.timer = setInterval(() => {
      this.sweep(advance).catch((err) => this.ctx.deps.log?.warn({ err: (err as Error).message }, 'sweep failed'));
    }, everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
