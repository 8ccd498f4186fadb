// `sweetloop doctor`: checks each thing Sweetloop needs from the machine, by using it, and says how to fix
// what is missing. Every check is independent: one failing does not hide the others. With DISCORD_TOKEN set it also
// checks the production settings (bin/doctor-production.ts: token, endpoints, operators, guilds, salt, key and database password). The tool checks are
// bin/doctor-tools.ts: `sweetloop start` runs them too (toolChecks) and prints one summary of what is missing.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ConfigError, parseConfig, type Config } from './config.ts';
import type { CheckResult } from './doctor-production.ts';
import { checkBubblewrap, checkChromium, checkCompose, checkPython } from './doctor-tools.ts';

export type { CheckResult, CheckStatus } from './doctor-production.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export async function checkConfig(
  env: Record<string, string | undefined>,
): Promise<{ result: CheckResult; config: Config }> {
  try {
    const config = parseConfig(env);
    return { result: { name: 'configuration', status: 'ok', detail: 'all variables valid' }, config };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const bad = new Set(err.problems.map((p) => p.variable));
    const cleaned = Object.fromEntries(Object.entries(env).filter(([k]) => !bad.has(k)));
    return {
      result: {
        name: 'configuration',
        status: 'fail',
        detail: err.problems.map((p) => `${p.variable}: ${p.message}`).join('; '),
        fix: 'correct the variables named (environment or .env); the other checks below use their defaults',
      },
      config: parseConfig(cleaned),
    };
  }
}

export async function checkDatabase(config: Config): Promise<CheckResult> {
  const { openDatabase } = await import('../prisma/db.ts');
  const { migrationStatus } = await import('../prisma/migrate.ts');
  if (!config.DATABASE_URL && !existsSync(join(config.PGLITE_DIR, 'PG_VERSION'))) {
    return {
      name: 'database',
      status: 'warn',
      detail: `embedded PGlite at ${config.PGLITE_DIR}: not created yet`,
      fix: 'run `npx sweetloop db migrate` (or `npm start`) to create it, or set DATABASE_URL to use Postgres',
    };
  }
  let db;
  try {
    db = await openDatabase({
      databaseUrl: config.DATABASE_URL,
      pgliteDir: config.PGLITE_DIR,
      poolSize: config.DATABASE_POOL_SIZE,
    });
  } catch (err) {
    return {
      name: 'database',
      status: 'fail',
      detail: (err as Error).message,
      fix: config.DATABASE_URL
        ? 'start Postgres or correct DATABASE_URL'
        : 'stop the process holding the embedded database, or set DATABASE_URL',
    };
  }
  try {
    const s = await migrationStatus(db);
    if (s.upToDate && s.edited.length === 0) {
      return {
        name: 'database',
        status: 'ok',
        detail: `${db.label} (${db.kind}), ${s.applied.length} migration(s) applied, up to date`,
      };
    }
    return {
      name: 'database',
      status: 'warn',
      detail: `${db.label} (${db.kind}): ${s.pending.length} pending, ${s.failed.length} failed, ${s.edited.length} edited migration(s)`,
      fix: 'run `npx sweetloop db migrate` (`npx sweetloop db status` shows each migration)',
    };
  } catch (err) {
    return {
      name: 'database',
      status: 'fail',
      detail: `${db.label}: ${(err as Error).message}`,
      fix: 'see `npx sweetloop db status`',
    };
  } finally {
    await db.close();
  }
}

interface BackendModule {
  initBackend(forced?: 'tensorflow' | 'wasm' | 'cpu'): Promise<{ name: string; detail: string }>;
}

export async function checkTfjs(config: Config): Promise<CheckResult> {
  const file = join(root, 'trainer', 'model', 'backend.ts');
  if (!existsSync(file)) {
    return {
      name: 'tfjs backend',
      status: 'warn',
      detail: 'not checked: trainer/model/backend.ts is missing; the default would be wasm (SIMD, one thread)',
    };
  }
  try {
    const mod = (await import(pathToFileURL(file).href)) as BackendModule;
    const info = await mod.initBackend(config.TFJS_BACKEND);
    const fast = info.name === 'tensorflow' || info.name === 'wasm';
    return {
      name: 'tfjs backend',
      status: fast ? 'ok' : 'warn',
      detail: `${info.name}: ${info.detail}`,
      ...(fast
        ? {}
        : {
            fix: 'install dependencies with `npm ci` (brings @tensorflow/tfjs-backend-wasm); a GPU host gets tensorflow via tfjs-node-gpu',
          }),
    };
  } catch (err) {
    return {
      name: 'tfjs backend',
      status: 'fail',
      detail: (err as Error).message,
      fix: config.TFJS_BACKEND
        ? `unset TFJS_BACKEND (now ${config.TFJS_BACKEND}) to pick the best available backend`
        : 'run `npm ci`',
    };
  }
}

export interface DoctorReport {
  checks: CheckResult[];
  ok: boolean;
}

/** Runs every check; `ok` is false when any failed (warnings do not count). */
export async function runDoctor(
  env: Record<string, string | undefined>,
  opts: { skip?: string[] } = {},
): Promise<DoctorReport> {
  const skip = new Set(opts.skip ?? []);
  const { result: configResult, config } = await checkConfig(env);
  const checks: CheckResult[] = [configResult];
  const guarded = async (name: string, fn: () => Promise<CheckResult>) => {
    if (skip.has(name)) return;
    try {
      checks.push(await fn());
    } catch (err) {
      checks.push({ name, status: 'fail', detail: `check crashed: ${(err as Error).message}` });
    }
  };
  await guarded('database', () => checkDatabase(config));
  await guarded('tfjs backend', () => checkTfjs(config));
  await guarded('chromium', () => checkChromium(config));
  await guarded('bubblewrap', () => checkBubblewrap(config));
  await guarded('python3', () => checkPython(config));
  if (!skip.has('docker compose')) {
    const compose = await checkCompose().catch(
      (err: Error): CheckResult => ({
        name: 'docker compose',
        status: 'warn',
        detail: `check crashed: ${err.message}`,
      }),
    );
    if (compose) checks.push(compose);
  }
  // Production (DISCORD_TOKEN set): what real people's sessions need besides the machine (bin/doctor-production.ts).
  if (config.DISCORD_TOKEN) {
    const p = await import('./doctor-production.ts');
    await guarded('discord token', () => p.checkDiscordToken(config));
    if (!skip.has('operators')) checks.push(p.checkOperators(config));
    if (!skip.has('guilds')) checks.push(p.checkGuilds(config));
    if (!skip.has('secrets')) checks.push(...p.checkSecrets(config));
    if (!skip.has('endpoints')) {
      try {
        checks.push(...(await p.checkEndpoints(await p.registeredEndpoints(config))));
      } catch (err) {
        checks.push({
          name: 'endpoints',
          status: 'fail',
          detail: `could not read the registered versions: ${(err as Error).message}`,
          fix: 'see the database check above',
        });
      }
    }
  }
  return { checks, ok: checks.every((c) => c.status !== 'fail') };
}

export function formatReport(report: DoctorReport): string {
  const mark = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' } as const;
  const lines = report.checks.flatMap((c) => [
    `[${mark[c.status]}] ${c.name}: ${c.detail}${c.affects && c.status !== 'ok' ? `; ${c.affects}` : ''}`,
    ...(c.fix && c.status !== 'ok' ? [`       fix: ${c.fix}`] : []),
  ]);
  const failed = report.checks.filter((c) => c.status === 'fail').length;
  const warned = report.checks.filter((c) => c.status === 'warn').length;
  lines.push(
    failed
      ? `${failed} check(s) failed, ${warned} warning(s).`
      : `All checks passed${warned ? ` (${warned} warning(s))` : ''}.`,
  );
  return lines.join('\n');
}
