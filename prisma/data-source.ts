// Whose sessions a read takes: people's, simulated collaborators', or both. Small and free of imports so the
// configuration (bin/config.ts) and every command line can name the choices without loading the database.

export type DataSource = 'human' | 'simulated' | 'both';
export const DATA_SOURCES = ['human', 'simulated', 'both'] as const satisfies readonly DataSource[];

/**
 * The one default, wherever no source is named (exports, /mod export, training runs and the trainer service
 * through TRAINER_DATA): people only, so simulated sessions are trained on or leave the database only when asked
 * for (`--data both`, `--source both`). The report breaks its figures down by source and so shows every source
 * unless told otherwise (bot/report/aggregate.ts).
 */
export const DEFAULT_DATA_SOURCE: DataSource = 'human';
