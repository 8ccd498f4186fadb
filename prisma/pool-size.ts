// How many Postgres connections one Sweetloop process's pool may open. Small and free of imports so the
// configuration (bin/config.ts, DATABASE_POOL_SIZE) can name the default without loading the database.

/**
 * DATABASE_POOL_SIZE's default, and the pool of callers that name none (tests, benchmarks). Chosen with
 * bench:bot at 200 people (bench/HISTORY.md, "The pool and the requests a session (2026-12-06)"): with 10
 * connections a turn waited up to 1.3 s (p99) for one. Postgres allows 100 connections by default, and the bot,
 * the trainer service, the dashboard and any command line each open a pool of this size (plus one connection
 * each for LISTEN), so the default leaves room for all of them.
 */
export const DEFAULT_POOL_SIZE = 10;

/** The most DATABASE_POOL_SIZE accepts: Postgres's default max_connections. */
export const MAX_POOL_SIZE = 100;
