// `sweetloop import-sessions` end to end: a real database, a sweet-rl file written by `sweetloop export`, bad lines
// reported with their numbers (exit code 1), and a second import that stores nothing.
import { appendFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../testing/database.ts';
import { seedSimulatedWorld } from '../../bot/export/simulated-world.ts';
import { runSweetloop, type SweetloopRun } from '../../../testing/sweetloop-cli.ts';

let source: Awaited<ReturnType<typeof createTestDatabase>>;
let target: Awaited<ReturnType<typeof createTestDatabase>>;
let dir: string;

beforeAll(async () => {
  [source, target] = await Promise.all([createTestDatabase(), createTestDatabase()]);
  await seedSimulatedWorld(source.prisma);
  dir = await mkdtemp(join(tmpdir(), 'sweetloop-import-cli-'));
});

afterAll(async () => {
  await Promise.all([source?.drop(), target?.drop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

function cli(url: string, args: string[]): Promise<SweetloopRun> {
  return runSweetloop(args, {
    env: { ...process.env, DATABASE_URL: url, EXPORT_SALT: 'cli-import-salt', LOG_LEVEL: 'warn' },
  });
}

describe('sweetloop import-sessions', () => {
  it('imports an export as simulated sessions, reports bad lines, and stores nothing on a second run', async () => {
    const file = join(dir, 'rollouts.jsonl');
    const e = await cli(source.url, [
      'export',
      '--format',
      'sweet-rl',
      '--out',
      file,
      '--kind',
      'backend',
      '--source',
      'simulated',
      '--per-task',
      '2',
    ]);
    expect(e.code, e.stderr).toBe(0);
    appendFileSync(file, '{"task": {"problem_description": "x"}, "dialogue_history": []}\n');

    const first = await cli(target.url, [
      'import-sessions',
      file,
      '--kind',
      'backend',
      '--collaborator',
      'paper-rollouts',
    ]);
    expect(first.code).toBe(1);
    expect(first.stderr).toMatch(/rollouts\.jsonl:7: dialogue_history: needs the problem description/);
    expect(first.stdout).toMatch(/7 lines, 6 sessions stored, 0 already stored, 1 invalid; 3 new tasks/);
    const sessions = await target.prisma.session.findMany({ include: { participant: true } });
    expect(sessions).toHaveLength(6);
    expect(new Set(sessions.map((s) => `${s.channel}/${s.simulated}/${s.participant.discordUserId}`))).toEqual(
      new Set(['imported/true/sim:paper-rollouts']),
    );

    const second = await cli(target.url, ['import-sessions', file, '--kind', 'backend']);
    expect(second.stdout).toMatch(/0 sessions stored, 6 already stored/);
    expect(await target.prisma.session.count()).toBe(6);

    const missing = await cli(target.url, ['import-sessions', join(dir, 'nope.jsonl'), '--kind', 'backend']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/no such file/);
    const noKind = await cli(target.url, ['import-sessions', file]);
    expect(noKind.code).not.toBe(0);
    expect(noKind.stderr).toMatch(/--kind/);
  });
});
