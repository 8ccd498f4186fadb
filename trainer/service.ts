// `sweetloop trainer`: runs forever. Waits until enough new usable sessions have arrived since the last run's
// data, trains (resuming an unfinished run first), evaluates the candidate against the deployed version and
// promotes it through the gate (with PROMOTION_HUMAN_AB_SHARE, into an A/B experiment with people). One run
// at a time across processes: on Postgres a session-level advisory lock held for the whole run (a second
// trainer waits, not trains); PGlite allows one process by construction.
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

export interface ServiceOptions {
  db: Database;
  minNewSessions: number;
  pollSeconds: number;
  /** Counts usable sessions that ended after a moment (the newest data of the last run). */
  countNewSessions: (after: Date | null) => Promise<number>;
  /** One training cycle: resume or start a run, then the gate. */
  cycle: () => Promise<void>;
  log: (line: string) => void;
  signal?: AbortSignal;
}

/** When the data of the latest run ended: sessions after it are "new". */
export async function lastTrainedAt(db: Database): Promise<Date | null> {
  const run = await db.prisma.trainingRun.findFirst({ where: { status: 'succeeded' }, orderBy: { createdAt: 'desc' } });
  return run ? run.createdAt : null;
}

export async function runService(o: ServiceOptions): Promise<void> {
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      o.signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
    });
  while (!o.signal?.aborted) {
    const lock = await tryTrainerLock(o.db);
    if (!lock) {
      o.log('another trainer holds the lock; waiting');
    } else {
      try {
        const unfinished = await o.db.prisma.trainingRun.count({ where: { status: { in: ['queued', 'running'] } } });
        const fresh = await o.countNewSessions(await lastTrainedAt(o.db));
        if (unfinished > 0 || fresh >= o.minNewSessions) {
          o.log(unfinished > 0 ? 'resuming an unfinished run' : `${fresh} new sessions: training`);
          await o.cycle();
        } else {
          o.log(`${fresh}/${o.minNewSessions} new sessions; waiting`);
        }
      } catch (err) {
        o.log(`training cycle failed: ${(err as Error).message}`);
      } finally {
        await lock.release();
      }
    }
    await sleep(o.pollSeconds * 1000);
  }
}
