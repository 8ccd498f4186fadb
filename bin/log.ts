// Structured logs on stderr: readable lines by default (pino-pretty, in this process and synchronously, so
// nothing is lost on exit and no worker thread starts), pino's JSON lines when LOG_FORMAT=json. Secrets never
// reach either: the redact list covers every config value that is one, and before a record is written every string
// in it (the message, nested values, an error's message and stack) has its URL query values, URL passwords, bearer
// credentials, dashboard tokens and the configured secrets' values replaced (redactText).
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { Config } from './config.ts';
import { TOKEN_PATTERN, TOKEN_PREFIX } from '../bot/dashboard/token.ts';
import { scrubSecret } from '../tasks/secret-text.ts';

export type { Logger };

/** The settings a logger reads; the secrets, when given, are also scrubbed wherever their values appear. */
export type LogSettings = Pick<Config, 'LOG_LEVEL' | 'LOG_FORMAT'> &
  Partial<Pick<Config, (typeof SECRET_SETTINGS)[number]>>;

/** Config values that are secrets: redacted by key, and their values scrubbed from any text logged. */
const SECRET_SETTINGS = [
  'DISCORD_TOKEN',
  'SIMULATOR_LLM_KEY',
  'EXPORT_SALT',
  'PRIVACY_KEY',
  'HF_TOKEN',
  'ENV_SERVE_TOKEN',
] as const;

export const REDACTED_PATHS = [
  ...SECRET_SETTINGS.flatMap((k) => [k, `*.${k}`]),
  ...['token', 'authorization', 'cookie', 'password', 'exportSalt', 'salt', 'key'].flatMap((k) => [k, `*.${k}`]),
];

const CENSOR = '[redacted]';
const TEXT_RULES: [RegExp, string][] = [
  // Every query value of a URL or path (/login?token=..., ?api_key=...): its names stay, for the reader.
  [/([?&][^=&#\s"'<>?]+=)[^&#\s"'<>]+/g, `$1${CENSOR}`],
  // A password in a URL (postgres://user:password@host).
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^/\s:@]*:)[^@\s/]+@/gi, `$1${CENSOR}@`],
  // Credentials in headers written out as text.
  [/\b(Bearer|Bot|Basic)\s+[A-Za-z0-9._~+/=-]{6,}/g, `$1 ${CENSOR}`],
  // Dashboard tokens (bot/dashboard/access.ts), wherever they turn up.
  [TOKEN_PATTERN, `${TOKEN_PREFIX}${CENSOR}`],
];

/** `text` with query values, URL passwords, bearer credentials, dashboard tokens and `secrets` replaced. */
export function redactText(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const s of secrets) if (s.length >= 6) out = scrubSecret(out, s, CENSOR);
  for (const [re, to] of TEXT_RULES) out = out.replace(re, to);
  return out;
}

/** A log argument with every string in it redacted (plain objects, arrays and errors walked; others as they are). */
export function redactValue(
  value: unknown,
  secrets: readonly string[] = [],
  depth = 0,
  seen = new WeakSet<object>(),
): unknown {
  if (typeof value === 'string') return redactText(value, secrets);
  if (!value || typeof value !== 'object' || depth > 8 || seen.has(value)) return value;
  seen.add(value);
  if (value instanceof Error) {
    // A copy of the same class (pino names its type by it), its message, stack, cause and own fields redacted.
    const copy = Object.create(Object.getPrototypeOf(value)) as Error;
    const hidden = (v: unknown) => ({ value: v, enumerable: false, writable: true, configurable: true });
    Object.defineProperties(copy, {
      message: hidden(redactText(value.message, secrets)),
      stack: hidden(value.stack && redactText(value.stack, secrets)),
    });
    if (value.cause !== undefined)
      Object.defineProperty(copy, 'cause', hidden(redactValue(value.cause, secrets, depth + 1, seen)));
    for (const [k, v] of Object.entries(value))
      (copy as unknown as Record<string, unknown>)[k] = redactValue(v, secrets, depth + 1, seen);
    return copy;
  }
  if (Array.isArray(value)) return value.map((v) => redactValue(v, secrets, depth + 1, seen));
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactValue(v, secrets, depth + 1, seen)]));
}

/**
 * The logger of a command. `level` overrides LOG_LEVEL (the console lowers the default `info` to `warn`);
 * `destination` is for tests (default: stderr).
 */
export function createLogger(
  settings: LogSettings,
  name = 'sweetloop',
  opts: { level?: string; destination?: NodeJS.WritableStream } = {},
): Logger {
  const secrets = SECRET_SETTINGS.map((k) => settings[k]).filter((v): v is string => typeof v === 'string');
  const options: pino.LoggerOptions = {
    name,
    level: opts.level ?? settings.LOG_LEVEL,
    redact: { paths: REDACTED_PATHS, censor: CENSOR },
    hooks: {
      logMethod(args, method) {
        const clean = args.map((a) => redactValue(a, secrets));
        // An error logged alone goes under `err` with its message as the line's, as pino itself does.
        if (args[0] instanceof Error)
          clean.splice(
            0,
            1,
            { err: clean[0] },
            ...(args.length === 1 ? [(clean[0] as { message: string }).message] : []),
          );
        return method.apply(this, clean as Parameters<typeof method>);
      },
    },
  };
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
