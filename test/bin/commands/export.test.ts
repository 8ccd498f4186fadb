// The `sweetloop export` and `sweetloop report` commands end to end: configuration from the environment, a real
// database, files on disk, and clear errors for bad flags.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../bot/testing/database.ts';
import { pseudonymize } from '../../../bot/export/pseudonym.ts';
import { IDS, seedExportWorld } from '../../bot/export/fixtures.ts';

let t: Awaited<ReturnType<typeof createTestDatabase>>;
let dir: string;

beforeAll(async () => {
  t = await createTestDatabase();
  await seedExportWorld(t.prisma);
  dir = await mkdtemp(join(tmpdir(), 'sweetloop-export-cli-'));
});

afterAll(async () => {
  await t?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function cli(args: string[]) {
  return spawnSync(process.execPath, ['bin/sweetloop.mjs', ...args], {
    encoding: 'utf8',
    env: { ...process.env, DATABASE_URL: t.url, EXPORT_SALT: 'cli-test-salt', LOG_LEVEL: 'warn' },
  });
}

describe('sweetloop export / report', () => {
  it('exports with filters, writes the card, uses EXPORT_SALT', () => {
    const out = join(dir, 'backend-test.jsonl');
    const r = cli(['export', '--format', 'jsonl', '--out', out, '--kind', 'backend', '--split', 'test', '--include-flagged', '--exclude-comments']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/exported 2 sessions \(8 turns\)/);
    const rows = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(rows.map((x) => x.task.externalId)).toEqual(['T2', 'T2']);
    expect(rows.map((x) => x.participant.pseudonym).sort()).toEqual([pseudonymize(IDS.alice, 'cli-test-salt'), pseudonymize(IDS.bob, 'cli-test-salt')].sort());
    expect(rows[1].flags[0].reason).toBeNull();
    const card = readFileSync(`${out}.README.md`, 'utf8');
    expect(card).toMatch(/- sessions: 2\n/);
    expect(card).toMatch(/- split: test/);
    expect(card).not.toMatch(/development default salt/);
  });

  it('rejects bad flags with a clear message and writes nothing', () => {
    const out = join(dir, 'bad.jsonl');
    const bad = cli(['export', '--format', 'jsonl', '--out', out, '--since', '2026-02-01', '--until', '2026-01-01']);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/--since must be before --until/);
    const badDate = cli(['export', '--format', 'jsonl', '--out', out, '--since', 'yesterday-ish']);
    expect(badDate.status).not.toBe(0);
    expect(badDate.stderr).toMatch(/--since: expected a date/);
    expect(existsSync(out)).toBe(false);
  });

  it('writes a report directory', () => {
    const out = join(dir, 'report');
    const r = cli(['report', '--out', out, '--no-png', '--humans-only']);
    expect(r.status, r.stderr).toBe(0);
    const data = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(data.groups.every((g: { collaborator: string }) => g.collaborator === 'human')).toBe(true);
    expect(data.groups.reduce((a: number, g: { sessions: number }) => a + g.sessions, 0)).toBe(5); // S1 S4 S10 S2 S3
    expect(existsSync(join(out, 'success-by-policy.svg'))).toBe(true);
    expect(existsSync(join(out, 'success-by-policy.png'))).toBe(false);
  });
});
