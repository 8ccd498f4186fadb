// The `sweetloop export` and `sweetloop report` commands end to end: configuration from the environment, a real
// database, files on disk, and clear errors for bad flags.
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../testing/database.ts';
import { pseudonymize } from '../../../bot/export/pseudonym.ts';
import { IDS, seedExportWorld } from '../../bot/export/fixtures.ts';
import { runSweetloop, type SweetloopRun } from '../../../testing/sweetloop-cli.ts';

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

function cli(args: string[]): Promise<SweetloopRun> {
  return runSweetloop(args, {
    env: { ...process.env, DATABASE_URL: t.url, EXPORT_SALT: 'cli-test-salt', LOG_LEVEL: 'warn' },
  });
}

describe('sweetloop export / report', () => {
  it('exports with filters, writes the card, uses EXPORT_SALT', async () => {
    const out = join(dir, 'backend-test.jsonl');
    const r = await cli([
      'export',
      '--format',
      'jsonl',
      '--out',
      out,
      '--kind',
      'backend',
      '--split',
      'test',
      '--include-flagged',
      '--exclude-comments',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/exported 2 sessions \(8 turns\)/);
    const rows = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows.map((x) => x.task.externalId)).toEqual(['T2', 'T2']);
    expect(rows.map((x) => x.participant.pseudonym).sort()).toEqual(
      [pseudonymize(IDS.alice, 'cli-test-salt'), pseudonymize(IDS.bob, 'cli-test-salt')].sort(),
    );
    expect(rows[1].flags[0].reason).toBeNull();
    const card = readFileSync(`${out}.README.md`, 'utf8');
    expect(card).toMatch(/- sessions: 2\n/);
    expect(card).toMatch(/- split: test/);
    expect(card).not.toMatch(/development default salt/);
  });

  it('rejects bad flags with a clear message and writes nothing', async () => {
    const out = join(dir, 'bad.jsonl');
    const bad = await cli([
      'export',
      '--format',
      'jsonl',
      '--out',
      out,
      '--since',
      '2026-02-01',
      '--until',
      '2026-01-01',
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--since must be before --until/);
    const badDate = await cli(['export', '--format', 'jsonl', '--out', out, '--since', 'yesterday-ish']);
    expect(badDate.code).not.toBe(0);
    expect(badDate.stderr).toMatch(/--since: expected a date/);
    expect(existsSync(out)).toBe(false);
  });

  it('sweet-rl: one kind per file (the refusal names --kind), --source, --per-task and --chat-template', async () => {
    const mixed = await cli(['export', '--format', 'sweet-rl', '--out', join(dir, 'mixed.jsonl')]);
    expect(mixed.code).not.toBe(0);
    expect(mixed.stderr).toMatch(/one task kind.*add --kind backend or --kind frontend/);
    expect(existsSync(join(dir, 'mixed.jsonl'))).toBe(false);

    const out = join(dir, 'backend.sweet-rl.jsonl');
    const r = await cli([
      'export',
      '--format',
      'sweet-rl',
      '--out',
      out,
      '--kind',
      'backend',
      '--source',
      'both',
      '--chat-template',
      'chatml',
    ]);
    expect(r.code, r.stderr).toBe(0);
    // S1 and S2 (people) and S8 (simulated); S10 has no evaluation.
    expect(r.stdout).toMatch(/exported 3 sessions/);
    const rows = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows[0].dialogue_history[1].input).toMatch(/^<\|im_start\|>system\n[^]*<\|im_start\|>assistant\n$/);
    const card = readFileSync(`${out}.README.md`, 'utf8');
    expect(card).toMatch(/chat template `chatml`/);
    expect(card).toMatch(/- collaborators: people and simulators/);

    // T1 is the only task with two such sessions (S1 and the simulated S8): k = 2 blocks of one task.
    const blocks = join(dir, 'blocks.jsonl');
    const b = await cli([
      'export',
      '--format',
      'sweet-rl',
      '--out',
      blocks,
      '--kind',
      'backend',
      '--source',
      'both',
      '--per-task',
      '2',
    ]);
    expect(b.code, b.stderr).toBe(0);
    expect(
      readFileSync(blocks, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).task.problem_description),
    ).toEqual(Array(2).fill(rows[0].task.problem_description));
    const bad = await cli(['export', '--format', 'jsonl', '--out', join(dir, 'x.jsonl'), '--per-task', '2']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/perTask: only with the sweet-rl format/);
    const badTemplate = await cli([
      'export',
      '--format',
      'sweet-rl',
      '--kind',
      'backend',
      '--out',
      join(dir, 'y.jsonl'),
      '--chat-template',
      'no-such-template',
    ]);
    expect(badTemplate.code).not.toBe(0);
    expect(badTemplate.stderr).toMatch(/--chat-template: "no-such-template" is neither llama3 nor chatml/);
  });

  it("the README's own export with too few sessions a task: says which filter left none, exits 1, writes nothing unless --allow-empty", async () => {
    const out = join(dir, 'colbench.jsonl');
    const args = ['export', '--format', 'sweet-rl', '--kind', 'backend', '--per-task', '3', '--out', out];
    const r = await cli(args);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /nothing to export: .*; 0 in tasks with at least 3 such sessions \(--per-task 3\)\. Nothing was written \(--allow-empty/,
    );
    expect(existsSync(out)).toBe(false);
    const allowed = await cli([...args, '--allow-empty']);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stdout).toMatch(
      /exported 0 sessions .*\nthe file is empty \(--allow-empty\): .*0 in tasks with at least 3/,
    );
    expect(readFileSync(out, 'utf8')).toBe('');
    expect(readFileSync(`${out}.README.md`, 'utf8')).toMatch(/- blocks: none \(the file is empty\)/);
  });

  it('says how many sessions unresolved flags kept out, and why', async () => {
    const r = await cli([
      'export',
      '--format',
      'jsonl',
      '--out',
      join(dir, 'flags.jsonl'),
      '--kind',
      'backend',
      '--split',
      'test',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /exported 1 sessions[^]*\n1 session\(s\) left out by unresolved moderation flags: .+ \(1\)\. A moderator confirms or clears them on the dashboard's Flags page/,
    );
  });

  it('export-preferences with none to export says why and exits 1 unless --allow-empty', async () => {
    const out = join(dir, 'prefs.jsonl');
    const r = await cli(['export-preferences', '--out', out]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/nothing to export: 0 comparison\(s\) offered \(\/compare\)/);
    expect(existsSync(out)).toBe(false);
    const allowed = await cli(['export-preferences', '--out', out, '--allow-empty']);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stdout).toMatch(/exported 0 preference\(s\) .*\(empty: 0 comparison/);
  });

  it('hf writes a dataset folder', async () => {
    const out = join(dir, 'hf-folder');
    const r = await cli(['export', '--format', 'hf', '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(join(out, 'README.md'))).toBe(true);
    expect(existsSync(join(out, 'data', 'backend', 'train.parquet'))).toBe(true);
    expect(existsSync(join(out, 'data', 'backend', 'test.parquet'))).toBe(true);
    expect(readFileSync(join(out, 'README.md'), 'utf8')).toMatch(/^---\n[^]*configs:\n- config_name: "backend"/);
  });

  it('writes a report directory', async () => {
    const out = join(dir, 'report');
    const r = await cli(['report', '--out', out, '--no-png', '--humans-only']);
    expect(r.code, r.stderr).toBe(0);
    const data = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(data.groups.every((g: { collaborator: string }) => g.collaborator === 'human')).toBe(true);
    expect(data.groups.reduce((a: number, g: { sessions: number }) => a + g.sessions, 0)).toBe(5); // S1 S4 S10 S2 S3
    expect(existsSync(join(out, 'success-by-policy.svg'))).toBe(true);
    expect(existsSync(join(out, 'success-by-policy.png'))).toBe(false);
  });
});
