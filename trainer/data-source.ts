// Whose sessions a read takes: people's, simulated collaborators', or both. Small and free of imports so the
// configuration (bin/config.ts) and every command line can name the choices without loading the database.

export type DataSource = 'human' | 'simulated' | 'both';
export const DATA_SOURCES = ['human', 'simulated', 'both'] as const satisfies readonly DataSource[];

/**
 * The source when none is named (exports, /mod export): people only, so that simulated sessions leave the
 * database only when asked for. Training runs name theirs (TRAINER_DATA in bin/config.ts, `sweetloop train
 * --data`), and the report shows every source unless told otherwise (bot/report/aggregate.ts reportFilters).
 */
export const DEFAULT_DATA_SOURCE: DataSource = 'human';
