import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ConfigError, describeConfig, parseConfig } from '../../bin/config.ts';
import { SWEETLOOP_ENTRY } from '../../bot/testing/sweetloop-cli.ts';

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
    expect(Object.keys(by).sort()).toEqual(['DATABASE_URL', 'DISCORD_GUILD_IDS', 'LOG_LEVEL', 'MAX_TURNS', 'REWARD_RATING_WEIGHT']);
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
    for (const bad of ['100', '-1', '12.5', 'half']) expect(problemsOf({ PROMOTION_HUMAN_AB_SHARE: bad }).map((p) => p.variable)).toEqual(['PROMOTION_HUMAN_AB_SHARE']);
    expect(parseConfig({}).TRAINER_USE_PREFERENCES).toBe(true);
    expect(parseConfig({ TRAINER_USE_PREFERENCES: 'false' }).TRAINER_USE_PREFERENCES).toBe(false);
    expect(problemsOf({ TRAINER_USE_PREFERENCES: 'maybe' })[0]!.message).toMatch(/true or false/);
  });

  it('describes every variable', () => {
    for (const row of describeConfig()) expect(row.description, row.variable).not.toBe('');
  });
});
