// The `sweetloop` command line: every command documented in --help, and the db commands end to end.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import pg from 'pg';
import { buildProgram } from '../../bin/cli.ts';
import { EXIT_MIGRATIONS_PENDING } from '../../bin/commands/migrations.ts';
import { runSweetloop, type SweetloopRun } from '../../testing/sweetloop-cli.ts';

function sweetloop(args: string[], env: Record<string, string> = {}): Promise<SweetloopRun> {
  return runSweetloop(args, { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, timeoutMs: 120_000 });
}

function allCommands(cmd: Command, path: string[] = []): { path: string[]; cmd: Command }[] {
  return cmd.commands.flatMap((c) => [{ path: [...path, c.name()], cmd: c }, ...allCommands(c, [...path, c.name()])]);
}

describe('sweetloop --help', () => {
  it('lists every top-level command with its description', async () => {
    const { code, stdout } = await sweetloop(['--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^Usage: sweetloop/);
    const program = buildProgram();
    expect(program.commands.map((c) => c.name())).toEqual(expect.arrayContaining(['db', 'doctor']));
    for (const c of program.commands) {
      // Commander wraps long descriptions: compare the first words.
      const start = c.description().split(/\s+/).slice(0, 3).join(' ');
      expect(stdout, c.name()).toMatch(
        new RegExp(`^  ${c.name()}\\b.*${start.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'm'),
      );
    }
  });

  it('gives every command and subcommand a one-line description shown in its group help', () => {
    const program = buildProgram();
    for (const { path, cmd } of allCommands(program)) {
      expect(cmd.description().trim(), path.join(' ')).not.toBe('');
      expect(cmd.description(), path.join(' ')).not.toMatch(/\n/);
      const parent = cmd.parent!;
      expect(parent.helpInformation(), path.join(' ')).toMatch(new RegExp(`^  ${cmd.name()}\\b`, 'm'));
    }
  });
});

describe('sweetloop db', () => {
  const name = `sweetloop_clitest_${randomBytes(4).toString('hex')}`;
  const url = `postgres://postgres@127.0.0.1:5432/${name}`;
  const admin = async (sql: string) => {
    const c = new pg.Client({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'postgres' });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  beforeAll(() => admin(`CREATE DATABASE ${name}`));
  afterAll(() => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));

  it('status reports pending migrations with its own exit code, migrate applies them once', async () => {
    const before = await sweetloop(['db', 'status'], { DATABASE_URL: url });
    expect(before.code).toBe(EXIT_MIGRATIONS_PENDING);
    expect(before.stdout).toContain(`database: postgres://postgres@127.0.0.1:5432/${name} (postgres)`);
    expect(before.stdout).toMatch(/_init {2}pending/);

    const first = await sweetloop(['db', 'migrate'], { DATABASE_URL: url });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/applied \d+ migration\(s\)/);

    const second = await sweetloop(['db', 'migrate'], { DATABASE_URL: url });
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/already up to date, nothing applied/);

    const after = await sweetloop(['db', 'status'], { DATABASE_URL: url });
    expect(after.code).toBe(0);
    expect(after.stdout).toMatch(/_init {2}applied \d{4}-/);
    expect(after.stdout).toMatch(/Database schema is up to date\./);
  });

  it('a database that cannot be reached fails with exit 1 and says where it looked', async () => {
    const r = await sweetloop(['db', 'migrate'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot reach the database \(postgres:\/\/postgres@127\.0\.0\.1:1\/none\): ECONNREFUSED/);
  });
});
