// Scoring answers in a bounded pool: at most `size` answers are scored at once (each is a bubblewrap sandbox or a
// Chromium page, CPU-heavy on a small machine), the others wait in arrival order. The queue is in memory only: what
// makes an answer owed is in the database (an answered session without an Evaluation row), so a restart loses
// nothing (bot/session/recovery.ts hands every such session back to the turn script, which queues it again).

/** Where an answer stands: waiting with `ahead` answers before it, or being scored now. */
export type ScoringState = { state: 'queued'; ahead: number } | { state: 'scoring' };

/** The pool was closed (the engine is stopping): the answer was not scored here; the next start scores it. */
export class ScoringClosedError extends Error {
  override name = 'ScoringClosedError';
}

interface Waiting {
  start: () => void;
  reject: (err: Error) => void;
}

export class ScoringPool {
  private running = 0;
  private readonly queue: Waiting[] = [];
  private readonly runningJobs = new Set<Promise<unknown>>();
  private closed = false;

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1)
      throw new RangeError(`the scoring pool needs a whole number of places >= 1, got ${size}`);
  }

  /** Answers waiting, and being scored now. */
  get load(): { queued: number; running: number } {
    return { queued: this.queue.length, running: this.running };
  }

  /**
   * Runs `job` (scoring one answer, stored within it) when a place is free; `onState` hears once where it stands
   * on arrival (queued with how many ahead, or scoring at once) and, if it waited, once when its scoring starts.
   * The callers keep one job per answer (bot/session/answers.ts holds a lock per session around it).
   */
  run<T>(job: () => Promise<T>, onState?: (s: ScoringState) => void): Promise<T> {
    if (this.closed) return Promise.reject(new ScoringClosedError('the scoring pool is closed'));
    return new Promise<T>((resolve, reject) => {
      const start = () => {
        this.running++;
        tell(onState, { state: 'scoring' });
        const p = job().then(resolve, reject);
        this.runningJobs.add(p);
        void p.finally(() => {
          this.runningJobs.delete(p);
          this.running--;
          this.next();
        });
      };
      if (this.running < this.size) start();
      else {
        this.queue.push({ start, reject });
        tell(onState, { state: 'queued', ahead: this.queue.length - 1 + this.running });
      }
    });
  }

  private next(): void {
    while (!this.closed && this.running < this.size && this.queue.length) this.queue.shift()!.start();
  }

  /**
   * Stops taking answers: those waiting are given back unscored (ScoringClosedError: still owed in the database),
   * those being scored finish and are stored, which this waits for (each sandbox has its own time limit).
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.queue.splice(0))
      w.reject(new ScoringClosedError('the scoring pool closed before this answer was scored'));
    await Promise.allSettled([...this.runningJobs]);
  }
}

/** What a view does with the news is its own business: a failed post must not fail the scoring. */
function tell(onState: ((s: ScoringState) => void) | undefined, s: ScoringState): void {
  try {
    onState?.(s);
  } catch {
    // the view's own failure, reported by the view
  }
}
