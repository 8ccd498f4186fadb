// `sweetloop trainer`: runs forever. Waits until enough new usable sessions have arrived since the last run's
// data, trains (resuming an unfinished run first), evaluates the candidate against the deployed version and
// promotes it through the gate (with PROMOTION_HUMAN_AB_SHARE, into an A/B experiment with people). One run
// at a time across processes: on Postgres a session-level advisory lock held for the whole run (a second
// trainer waits, not trains); PGlite allows one process by construction, and refuses the service through its owner.
// Before counting data it asks `plan` what it would train on (trainer/training-source.ts): when it cannot train
// (an endpoint without a local base model, nothing deployed...) it says so once, creates no run, shows it in
// its status (readiness and the sweetloop_trainer_state gauge, bin/commands/trainer.ts) and looks again at the
// next poll, so deploying a trainable version or registering a base directory is picked up. A failing cycle
// backs off: the wait doubles with each failure in a row, up to TRAINER_MAX_BACKOFF_SECONDS.
import type pg from 'pg';
import type { Database } from '../prisma/db.ts';

/** Arbitrary, fixed: the key of the trainer's advisory lock. */
export const TRAINER_LOCK_KEY = 0x5377_5452; // "SwTR"

export interface TrainerLock {
  release(): Promise<void>;
}

/**
 * Tries to take the trainer lock without waiting. Postgres: pg_try_advisory_lock on a dedicated connection
 * (the lock lives as long as that connection). PGlite: the database directory is already exclusive to this
 * process, so the lock is a process-local flag.
 */
export async function tryTrainerLock(db: Database): Promise<TrainerLock | null> {
  // Through the process that owns the embedded database every connection is PGlite's one session, where an
  // advisory lock admits any number of takers (prisma/pglite-server.ts): no lock, so no service.
  if (db.kind === 'pglite' && db.raw.kind === 'postgres')
    throw new Error(
      `the trainer service cannot run beside the process that holds the embedded database (${db.label}): its one-run-at-a-time lock needs the database to itself. Stop that process first, or keep the data in Postgres (DATABASE_URL) and run both.`,
    );
  if (db.raw.kind === 'postgres') {
    const client: pg.PoolClient = await db.raw.pool.connect();
    try {
      const r = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [TRAINER_LOCK_KEY]);
      if (!r.rows[0]?.ok) {
        client.release();
        return null;
      }
    } catch (err) {
      client.release();
      throw err;
    }
    let released = false;
    return {
      async release() {
        if (released) return;
        released = true;
        try {
          await client.query('SELECT pg_advisory_unlock($1)', [TRAINER_LOCK_KEY]);
        } finally {
          client.release();
        }
      },
    };
  }
  if (localHeld) return null;
  localHeld = true;
  return {
    async release() {
      localHeld = false;
    },
  };
}
let localHeld = false;

/** What the service is doing, for its readiness and metrics. */
export const TRAINER_STATES = ['starting', 'waiting', 'training', 'cannot-train', 'backing-off', 'lock-held'] as const;
export type TrainerState = (typeof TRAINER_STATES)[number];

export class ServiceStatus {
  state: TrainerState = 'starting';
  /** Why it cannot train, or the last failure's message. */
  reason: string | null = null;
  /** Failed cycles in a row. */
  failures = 0;
  /** Polls done (each a look at the deployed version and the data). */
  polls = 0;

  /** Ready: it has looked once, can train and its last cycle did not fail; otherwise why not. */
  readiness(): { ok: boolean; reason?: string } {
    if (this.state === 'starting')
      return { ok: false, reason: 'starting: has not looked at the deployed version and the data yet' };
    if (this.state === 'cannot-train') return { ok: false, reason: `cannot train: ${this.reason}` };
    if (this.state === 'backing-off')
      return { ok: false, reason: `${this.failures} failed cycle(s) in a row, the last: ${this.reason}` };
    return { ok: true };
  }
}

/**
 * Seconds to wait before the next poll: the poll interval, or after `failures` failed cycles in a row twice
 * the previous wait (poll x 2^failures), never more than `maxSeconds` (nor less than the poll interval).
 */
export function backoffSeconds(failures: number, pollSeconds: number, maxSeconds: number): number {
  if (failures <= 0) return pollSeconds;
  return Math.max(pollSeconds, Math.min(maxSeconds, pollSeconds * 2 ** Math.min(failures, 52)));
}

/** What the next run would train on (trainer/training-source.ts), or why none can be made. */
export type ServicePlan<P> = ({ ok: true; summary: string } & P) | { ok: false; reason: string };

export interface ServiceOptions<P = object> {
  db: Database;
  minNewSessions: number;
  pollSeconds: number;
  /** The longest wait after failing cycles (TRAINER_MAX_BACKOFF_SECONDS). */
  maxBackoffSeconds: number;
  /** Counts usable sessions that ended after a moment (the newest data of the last run). */
  countNewSessions: (after: Date | null) => Promise<number>;
  /** What a new run would start from, read at each poll. */
  plan: () => Promise<ServicePlan<P>>;
  /** One training cycle: resume the unfinished run (plan null) or start one from `plan`, then the gate. */
  cycle: (plan: ({ ok: true; summary: string } & P) | null) => Promise<void>;
  log: (line: string) => void;
  status?: ServiceStatus;
  signal?: AbortSignal;
}

/** When the data of the latest run ended: sessions after it are "new". */
export async function lastTrainedAt(db: Database): Promise<Date | null> {
  const run = await db.prisma.trainingRun.findFirst({ where: { status: 'succeeded' }, orderBy: { createdAt: 'desc' } });
  return run ? run.createdAt : null;
}

export async function runService<P>(o: ServiceOptions<P>): Promise<void> {
  const status = o.status ?? new ServiceStatus();
  // The abort listener goes with its timer: one left per poll would pile up on a service that runs for months.
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const onAbort = () => (clearTimeout(t), resolve());
      const t = setTimeout(() => (o.signal?.removeEventListener('abort', onAbort), resolve()), ms);
      o.signal?.addEventListener('abort', onAbort, { once: true });
    });
  // Said once until it changes: what it would train on, or why it cannot.
  let said: string | null = null;
  const sayOnce = (line: string) => {
    if (line !== said) o.log(line);
    said = line;
  };
  while (!o.signal?.aborted) {
    const lock = await tryTrainerLock(o.db);
    if (!lock) {
      if (status.state !== 'lock-held') o.log('another trainer holds the lock; waiting');
      status.state = 'lock-held';
    } else {
      try {
        const unfinished = await o.db.prisma.trainingRun.count({ where: { status: { in: ['queued', 'running'] } } });
        if (unfinished > 0) {
          o.log('resuming an unfinished run');
          status.state = 'training';
          await o.cycle(null);
          status.state = 'waiting';
          status.reason = null;
        } else {
          const plan = await o.plan();
          if (!plan.ok) {
            sayOnce(`cannot train: ${plan.reason}`);
            status.state = 'cannot-train';
            status.reason = plan.reason;
          } else {
            sayOnce(`next run: ${plan.summary}`);
            const fresh = await o.countNewSessions(await lastTrainedAt(o.db));
            if (fresh >= o.minNewSessions) {
              o.log(`${fresh} new sessions: training`);
              status.state = 'training';
              await o.cycle(plan);
            } else {
              o.log(`${fresh}/${o.minNewSessions} new sessions; waiting`);
            }
            status.state = 'waiting';
            status.reason = null;
          }
        }
        status.failures = 0;
      } catch (err) {
        status.failures++;
        status.state = 'backing-off';
        status.reason = (err as Error).message;
        o.log(
          `training cycle failed (${status.failures} in a row): ${status.reason}; next try in ${backoffSeconds(status.failures, o.pollSeconds, o.maxBackoffSeconds)} s`,
        );
      } finally {
        await lock.release();
      }
    }
    status.polls++;
    await sleep(backoffSeconds(status.failures, o.pollSeconds, o.maxBackoffSeconds) * 1000);
  }
}
