// How many Postgres connections one Sweetloop process's pool may open. Small and free of imports so the
// configuration (bin/config.ts, DATABASE_POOL_SIZE) can name the default without loading the database.

/**
 * DATABASE_POOL_SIZE's default, and the pool of callers that name none (tests, benchmarks). Chosen with
 * bench:bot at 200 people (bench/HISTORY.md, "The pool and the requests a session (2026-12-06)"): with 10
 * connections (the size before) a turn waited p50 / p99 1.2 / 6.8 s for one on a busy machine, with 20 0.6 / 4.2 s,
 * and every acknowledgement came within Discord's 3 s (141 of 600 did not with 10). Postgres allows 100
 * connections by default: the bot, the trainer service, the dashboard and a command line at 20 each (plus one
 * each for LISTEN) take 84 of them.
 */
export const DEFAULT_POOL_SIZE = 20;

/** The most DATABASE_POOL_SIZE accepts: Postgres's default max_connections. */
export const MAX_POOL_SIZE = 100;
