import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, configSchema, parseConfig } from '../../bin/config.ts';
import {
  MAKE_SECRET_COMMAND,
  PUBLIC_SECRETS,
  assertProductionSecrets,
  isPublicSecret,
} from '../../bin/config-privacy.ts';
import { describeConfig } from '../../bin/readme-config.ts';
import { SWEETLOOP_ENTRY } from '../../testing/sweetloop-cli.ts';

const run = promisify(execFile);

function problemsOf(env: Record<string, string>): { variable: string; message: string }[] {
  try {
    parseConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('configuration', () => {
  it('accepts an empty environment and fills in the documented defaults', () => {
    const c = parseConfig({});
    expect(c.DATABASE_URL).toBeUndefined();
    expect(c.PGLITE_DIR).toBe('./data/pglite');
    expect(c.MAX_TURNS).toBe(10);
    expect(c.DISCORD_GUILD_IDS).toEqual([]);
    // Every default shown in the table of docs/configuration.md is the value parseConfig really uses.
    for (const row of describeConfig()) {
      if (!row.default) continue;
      expect(JSON.stringify((c as Record<string, unknown>)[row.variable])).toBe(row.default);
    }
  });

  it('treats empty strings as unset, as .env files write them', () => {
    expect(parseConfig({ DATABASE_URL: '', MAX_TURNS: '' }).MAX_TURNS).toBe(10);
  });

  it('names the variable and what it expects for each wrong value', () => {
    const problems = problemsOf({
      DATABASE_URL: 'mysql://root@localhost/x',
      MAX_TURNS: 'ten',
      DISCORD_GUILD_IDS: '123,not-a-snowflake',
      LOG_LEVEL: 'loud',
      REWARD_RATING_WEIGHT: '1.5',
    });
    const by = Object.fromEntries(problems.map((p) => [p.variable, p.message]));
    expect(Object.keys(by).sort()).toEqual([
      'DATABASE_URL',
      'DISCORD_GUILD_IDS',
      'LOG_LEVEL',
      'MAX_TURNS',
      'REWARD_RATING_WEIGHT',
    ]);
    expect(by.DATABASE_URL).toMatch(/postgres:\/\//);
    expect(by.MAX_TURNS).toMatch(/number/);
    expect(by.DISCORD_GUILD_IDS).toMatch(/snowflake/);
    expect(by.REWARD_RATING_WEIGHT).toMatch(/\[0, 1\]/);
  });

  it('lists every problem in the error message, one variable per line', () => {
    try {
      parseConfig({ MAX_TURNS: '0', SESSION_IDLE_MINUTES: '-5' });
      expect.unreachable();
    } catch (err) {
      expect((err as Error).message).toMatch(/^Invalid configuration:/);
      expect((err as Error).message).toMatch(/^ {2}MAX_TURNS: .+$/m);
      expect((err as Error).message).toMatch(/^ {2}SESSION_IDLE_MINUTES: .+$/m);
    }
  });

  it('a command started with a bad variable stops with exit code 2 and names it', async () => {
    const err = await run(process.execPath, [SWEETLOOP_ENTRY, 'db', 'status'], {
      env: { ...process.env, MAX_TURNS: 'lots', DATABASE_URL: '' },
    }).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(err).not.toBeNull();
    expect(err!.code).toBe(2);
    expect(err!.stderr).toMatch(/MAX_TURNS: expected a number/);
  });

  it('reads the human A/B share of promotion as a whole percent below 100, and the preferences switch', () => {
    expect(parseConfig({}).PROMOTION_HUMAN_AB_SHARE).toBe(0);
    expect(parseConfig({ PROMOTION_HUMAN_AB_SHARE: '25' }).PROMOTION_HUMAN_AB_SHARE).toBe(25);
    for (const bad of ['100', '-1', '12.5', 'half'])
      expect(problemsOf({ PROMOTION_HUMAN_AB_SHARE: bad }).map((p) => p.variable)).toEqual([
        'PROMOTION_HUMAN_AB_SHARE',
      ]);
    expect(parseConfig({}).TRAINER_USE_PREFERENCES).toBe(true);
    expect(parseConfig({ TRAINER_USE_PREFERENCES: 'false' }).TRAINER_USE_PREFERENCES).toBe(false);
    expect(problemsOf({ TRAINER_USE_PREFERENCES: 'maybe' })[0]!.message).toMatch(/true or false/);
  });

  it('describes every variable', () => {
    for (const row of describeConfig()) expect(row.description, row.variable).not.toBe('');
  });
});

describe('production secrets (bin/config-privacy.ts assertProductionSecrets)', () => {
  const own = {
    EXPORT_SALT: 'a1b2c3d4e5f60718293a4b5c6d7e8f90',
    PRIVACY_KEY: '0f9e8d7c6b5a49382716f5e4d3c2b1a0',
    DISCORD_GUILD_IDS: '123456789012345678',
  };
  const refusal = (env: Record<string, string>) => {
    try {
      assertProductionSecrets(parseConfig(env));
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return err as ConfigError;
    }
    return null;
  };

  it('lets a console or CLI run use the development default', () => {
    expect(refusal({})).toBeNull();
  });

  it('refuses a Discord bot with the default salt, no privacy key and no guild allowlist, naming each and the command that makes a secret', () => {
    const err = refusal({ DISCORD_TOKEN: 'token' })!;
    expect(err.problems.map((p) => p.variable)).toEqual(['EXPORT_SALT', 'PRIVACY_KEY', 'DISCORD_GUILD_IDS']);
    expect(err.problems[1]!.message).toMatch(/not set/);
    expect(err.message).toContain(MAKE_SECRET_COMMAND);
    expect(err.message).toContain("randomBytes(32).toString('hex')");
  });

  it("refuses every publicly known value, for either secret, and accepts the deployment's own", () => {
    for (const known of PUBLIC_SECRETS) {
      expect(refusal({ DISCORD_TOKEN: 'token', ...own, EXPORT_SALT: known })?.problems.map((p) => p.variable)).toEqual([
        'EXPORT_SALT',
      ]);
      if (known.length >= 16)
        expect(
          refusal({ DISCORD_TOKEN: 'token', ...own, PRIVACY_KEY: known })?.problems.map((p) => p.variable),
        ).toEqual(['PRIVACY_KEY']);
    }
    expect(refusal({ DISCORD_TOKEN: 'token', ...own })).toBeNull();
  });

  it("refuses compose's published database password, and accepts the deployment's own or none", () => {
    const compose = readFileSync('docker-compose.yml', 'utf8');
    const url = /x-database-url: &database-url (\S+)/
      .exec(compose)![1]!
      .replace(/\$\{POSTGRES_PASSWORD:-([^}]*)\}/, '$1');
    const err = refusal({ DISCORD_TOKEN: 'token', ...own, DATABASE_URL: url })!;
    expect(err.problems.map((p) => p.variable)).toEqual(['DATABASE_URL']);
    expect(err.message).toMatch(/POSTGRES_PASSWORD.*openssl rand -hex 32.*ALTER USER sweetloop PASSWORD/s);
    expect(err.message).not.toContain(url); // the URL, password included, is not repeated
    expect(
      refusal({
        DISCORD_TOKEN: 'token',
        ...own,
        DATABASE_URL: 'postgres://sweetloop:9c1f0e7d2b3a4c5d@postgres:5432/sweetloop',
      }),
    ).toBeNull();
    expect(
      refusal({ DISCORD_TOKEN: 'token', ...own, DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/x' }),
    ).toBeNull();
    expect(refusal({ ...own, DATABASE_URL: url })).toBeNull(); // the console and the CLI are not refused
  });

  it('refuses an empty guild allowlist unless DISCORD_GUILD_IDS=* says any guild on purpose', () => {
    const { DISCORD_GUILD_IDS: _g, ...secrets } = own;
    expect(refusal({ DISCORD_TOKEN: 'token', ...secrets })?.problems).toEqual([
      {
        variable: 'DISCORD_GUILD_IDS',
        message: expect.stringMatching(/anyone who adds the bot.*DISCORD_GUILD_IDS=\*/),
      },
    ]);
    expect(refusal({ DISCORD_TOKEN: 'token', ...secrets, DISCORD_GUILD_IDS: '*' })).toBeNull();
    expect(parseConfig({ DISCORD_GUILD_IDS: ' * ' }).DISCORD_GUILD_IDS).toBe('*');
    expect(parseConfig({ DISCORD_GUILD_IDS: '123456789012345678, 223456789012345678' }).DISCORD_GUILD_IDS).toEqual([
      '123456789012345678',
      '223456789012345678',
    ]);
    expect(problemsOf({ DISCORD_GUILD_IDS: '*,123456789012345678' })[0]!.message).toMatch(/or \* for any guild/);
  });

  it('knows every EXPORT_SALT, PRIVACY_KEY or POSTGRES_PASSWORD value written in the compose file, .env.example and docs/', () => {
    const files = [
      'docker-compose.yml',
      '.env.example',
      'README.md',
      ...readdirSync('docs').map((f) => join('docs', f)),
    ];
    const shipped = new Set<string>([configSchema.shape.EXPORT_SALT.parse(undefined)]);
    for (const f of files) {
      const text = readFileSync(f, 'utf8');
      // `EXPORT_SALT=value`, `EXPORT_SALT: value`, `${EXPORT_SALT:-value}`, each optionally quoted or in backticks.
      for (const m of text.matchAll(
        /\b(?:EXPORT_SALT|PRIVACY_KEY|POSTGRES_PASSWORD)(?:=|: |:-)["'`]?([A-Za-z0-9_.\-]{8,})/g,
      ))
        shipped.add(m[1]!);
    }
    for (const value of shipped) expect(isPublicSecret(value), `${value} is written in the repository`).toBe(true);
  });

  it('is what `sweetloop start` checks before anything else when DISCORD_TOKEN is set', async () => {
    const { DISCORD_TOKEN: _t, EXPORT_SALT: _s, PRIVACY_KEY: _k, ...rest } = process.env;
    const r = await run(process.execPath, [SWEETLOOP_ENTRY, 'start'], {
      env: {
        ...rest,
        DISCORD_TOKEN: 'token',
        EXPORT_SALT: 'change-me-please',
        DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
      },
    }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/EXPORT_SALT: is a publicly known value/);
    expect(r.stderr).toMatch(/PRIVACY_KEY: is not set/);
    expect(r.stderr).toMatch(/DISCORD_GUILD_IDS: is empty while DISCORD_TOKEN is set/);
    expect(r.stderr).toContain(MAKE_SECRET_COMMAND);
  });
});
