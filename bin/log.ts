// Structured logs on stderr: readable lines by default (pino-pretty, in this process and synchronously, so
// nothing is lost on exit and no worker thread starts), pino's JSON lines when LOG_FORMAT=json. Secrets never
// reach either: the redact list covers every config value that is one, and runs before formatting.
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { Config } from './config.ts';

export type { Logger };

export type LogSettings = Pick<Config, 'LOG_LEVEL' | 'LOG_FORMAT'>;

export const REDACTED_PATHS = ['DISCORD_TOKEN', 'SIMULATOR_LLM_KEY', 'EXPORT_SALT', 'PRIVACY_KEY', '*.DISCORD_TOKEN', '*.SIMULATOR_LLM_KEY', '*.EXPORT_SALT', '*.PRIVACY_KEY', 'token', '*.token', 'authorization', '*.authorization', 'exportSalt', '*.exportSalt', 'salt', '*.salt', 'key', '*.key'];

/**
 * The logger of a command. `level` overrides LOG_LEVEL (the console lowers the default `info` to `warn`);
 * `destination` is for tests (default: stderr).
 */
export function createLogger(settings: LogSettings, name = 'sweetloop', opts: { level?: string; destination?: NodeJS.WritableStream } = {}): Logger {
  const options = { name, level: opts.level ?? settings.LOG_LEVEL, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  if (settings.LOG_FORMAT === 'json') return pino(options, opts.destination ?? pino.destination(2));
  const out = opts.destination ?? process.stderr;
  const stream = pretty({
    destination: opts.destination ?? 2,
    sync: true,
    colorize: (out as { isTTY?: boolean }).isTTY === true,
    translateTime: 'SYS:HH:MM:ss',
    ignore: 'pid,hostname,name',
    singleLine: true,
  });
  return pino(options, stream);
}
