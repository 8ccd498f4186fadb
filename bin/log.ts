// Structured logs. Secrets never reach them: the redact list covers every config value that is one.
import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string, name = 'sweetloop'): Logger {
  return pino({
    name,
    level,
    redact: {
      paths: ['DISCORD_TOKEN', 'SIMULATOR_LLM_KEY', 'EXPORT_SALT', '*.DISCORD_TOKEN', '*.SIMULATOR_LLM_KEY', '*.EXPORT_SALT', 'token', '*.token', 'authorization', '*.authorization'],
      censor: '[redacted]',
    },
  }, pino.destination(2));
}
