// Importing into a real Postgres database (a throwaway one per file), through the library and through the CLI.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createTestDatabase } from '../../testing/database.ts';
import { parseTaskFile, exportTaskLine } from '../../tasks/importer.ts';
import type { TaskRecord } from '../../tasks/model.ts';
import { importTasks, listTasks } from '../../prisma/task-store.ts';
import { runSweetloop } from '../../testing/sweetloop-cli.ts';
import { BACKEND_SAMPLE, FRONTEND_SAMPLE, haveSample, SHARED_DIR } from '../helpers/colbench-sample.ts';

const SHARED = SHARED_DIR;
const haveShared = haveSample(BACKEND_SAMPLE) && haveSample(FRONTEND_SAMPLE);

type TestDb = Awaited<ReturnType<typeof createTestDatabase>>;
let t: TestDb;
let dir: string;

beforeAll(async () => {
  t = await createTestDatabase();
  dir = mkdtempSync(join(tmpdir(), 'sweetloop-store-'));
});
afterAll(async () => {
  await t?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const backend = (i: number): TaskRecord => ({
  kind: 'backend',
  description: `Add ${i} to a number. The signature of the function is: def add_${i}(x)`,
  reference: `def add_${i}(x):\n    return x + ${i}`,
  testCases: [`add_${i}(1)`, `add_${i}(-2)`],
  source: 'builtin',
  externalId: `add-${i}`,
  split: 'train',
});

function sweetloop(args: string[]) {
  return runSweetloop(args, {
    cwd: resolve(import.meta.dirname, '../..'),
    env: { ...process.env, DATABASE_URL: t.url, LOG_LEVEL: 'silent' },
  });
}

describe.skipIf(!haveShared)('importing the ColBench samples', () => {
  it('stores every task once, and a second import changes nothing', async () => {
    const counts: Record<string, number> = {};
    for (const kind of ['backend', 'frontend'] as const) {
      const parsed = await parseTaskFile(join(SHARED, `${kind}_sample.jsonl`), { kind, split: 'test' });
      expect(parsed.invalid).toEqual([]);
      expect(parsed.tasks.length + parsed.duplicates.length).toBe(parsed.lines);
      const first = await importTasks(t.prisma, parsed.tasks, { split: 'test' });
      expect(first).toMatchObject({ inserted: parsed.tasks.length, duplicates: 0, invalid: 0 });
      const again = await importTasks(t.prisma, parsed.tasks, { split: 'test' });
      expect(again).toMatchObject({ inserted: 0, duplicates: parsed.tasks.length, invalid: 0 });
      counts[kind] = parsed.tasks.length;
    }
    expect(counts.backend).toBeGreaterThanOrEqual(90);
    expect(counts.frontend).toBeGreaterThanOrEqual(35);
    const stored = await t.prisma.task.findFirst({ where: { kind: 'backend' }, orderBy: { externalId: 'asc' } });
    expect(stored?.externalId).toMatch(/^backend_sample\.jsonl:\d+$/);
    expect(Array.isArray(stored?.testCases) && stored.testCases.length).toBe(10);
    expect(await listTasks(t.prisma)).toEqual([
      { kind: 'backend', source: 'colbench', split: 'test', count: counts.backend },
      { kind: 'frontend', source: 'colbench', split: 'test', count: counts.frontend },
    ]);
    await t.prisma.task.deleteMany({ where: { source: 'colbench' } });
  });

  it('works through `sweetloop tasks import` twice', async () => {
    const file = join(SHARED, 'frontend_sample.jsonl');
    const first = await sweetloop(['tasks', 'import', file, '--kind', 'frontend', '--split', 'train']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/: \d+ stored, 0 already stored or repeated, 0 invalid/);
    const n = Number(/(\d+) stored/.exec(first.stdout)![1]);
    const second = await sweetloop(['tasks', 'import', file, '--kind', 'frontend', '--split', 'train']);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain(`: 0 stored, ${n} already stored or repeated, 0 invalid`);
    expect(await t.prisma.task.count({ where: { kind: 'frontend' } })).toBe(n);
    await t.prisma.task.deleteMany({ where: { source: 'colbench' } });
  });
});

describe('importing our own and malformed files', () => {
  it('reports bad lines with their numbers, stores the good ones, exits 1', async () => {
    const path = join(dir, 'mixed.jsonl');
    writeFileSync(
      path,
      [
        exportTaskLine(backend(1)),
        '{"kind": "backend", "description": "d"', // bad JSON
        '',
        JSON.stringify({
          kind: 'backend',
          description: 'd',
          reference: 'def f():\n  pass',
          source: 'builtin',
          externalId: 'x',
          split: 'train',
        }), // no tests
        JSON.stringify({ ...backend(9), testCases: 'f(1)' }), // wrong type
        exportTaskLine(backend(2)),
        exportTaskLine(backend(1)), // repeat of line 1
      ].join('\n') + '\n',
    );
    const r = await sweetloop(['tasks', 'import', path, '--kind', 'backend', '--split', 'train']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${path}:2: not valid JSON`);
    expect(r.stderr).toContain(`${path}:3: empty line`);
    expect(r.stderr).toMatch(new RegExp(`${path}:4: testCases: `));
    expect(r.stderr).toMatch(new RegExp(`${path}:5: testCases: `));
    expect(r.stderr).toContain(`${path}:7: same task as line 1, skipped`);
    expect(r.stdout).toContain(`${path}: 2 stored, 1 already stored or repeated, 4 invalid (7 lines)`);
    const stored = await t.prisma.task.findMany({ where: { source: 'builtin' }, orderBy: { externalId: 'asc' } });
    expect(stored.map((s) => s.externalId)).toEqual(['add-1', 'add-2']);

    const list = await sweetloop(['tasks', 'list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/backend\s+builtin\s+train\s+2/);
    expect(list.stdout).toMatch(/total\s+2/);

    const missing = await sweetloop([
      'tasks',
      'import',
      join(dir, 'nope.jsonl'),
      '--kind',
      'backend',
      '--split',
      'train',
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no such file/);
    const badKind = await sweetloop(['tasks', 'import', path, '--kind', 'mobile', '--split', 'train']);
    expect(badKind.code).not.toBe(0);
    expect(badKind.stderr).toMatch(/--kind must be one of backend, frontend/);
    await t.prisma.task.deleteMany({});
  });

  it('seeds the built-in library and ColBench-mini once', async () => {
    const first = await sweetloop(['tasks', 'seed', '--mini', '12', '--seed', '5']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/built-in library \((\d+) tasks\): \1 stored, 0 already stored/);
    expect(first.stdout).toContain(
      'ColBench-mini (seed 5) (12 tasks): 12 stored, 0 already stored or repeated, 0 invalid',
    );
    const second = await sweetloop(['tasks', 'seed', '--mini', '12', '--seed', '5']);
    expect(second.stdout).toContain(
      'ColBench-mini (seed 5) (12 tasks): 0 stored, 12 already stored or repeated, 0 invalid',
    );
    expect(await t.prisma.task.count({ where: { source: 'generated' } })).toBe(12);
    expect(await t.prisma.task.count({ where: { source: 'builtin', kind: 'frontend' } })).toBeGreaterThan(0);
    await t.prisma.task.deleteMany({});
  });

  it('writes nothing when the database refuses one row of the batch', async () => {
    // A real database error in the middle of the batch (second INSERT statement): a trigger refusing one row.
    await t.prisma.$executeRawUnsafe(`
      CREATE FUNCTION refuse_poison() RETURNS trigger AS $$
      BEGIN
        IF NEW."description" LIKE '%poison%' THEN RAISE EXCEPTION 'poisoned row refused'; END IF;
        RETURN NEW;
      END $$ LANGUAGE plpgsql`);
    await t.prisma.$executeRawUnsafe(
      `CREATE TRIGGER refuse_poison BEFORE INSERT ON "Task" FOR EACH ROW EXECUTE FUNCTION refuse_poison()`,
    );
    try {
      const records = [backend(11), backend(12), backend(13), { ...backend(14), description: 'poison' }, backend(15)];
      await expect(importTasks(t.prisma, records, { chunkSize: 2 })).rejects.toThrow(/poisoned row refused/);
      expect(await t.prisma.task.count()).toBe(0);
      // Without the poisoned row the same batch goes in whole, and is then idempotent.
      const good = records.filter((r) => r.description !== 'poison');
      expect(await importTasks(t.prisma, good, { chunkSize: 2 })).toMatchObject({ inserted: 4, duplicates: 0 });
      expect(await importTasks(t.prisma, good, { chunkSize: 2 })).toMatchObject({ inserted: 0, duplicates: 4 });
    } finally {
      await t.prisma.$executeRawUnsafe('DROP TRIGGER refuse_poison ON "Task"');
      await t.prisma.$executeRawUnsafe('DROP FUNCTION refuse_poison()');
      await t.prisma.task.deleteMany({});
    }
  });

  it('validates records handed over directly, and counts repeats in the batch', async () => {
    const bad = { ...backend(21), testCases: [] } as TaskRecord;
    const r = await importTasks(t.prisma, [backend(20), bad, backend(20)], { split: 'test' });
    expect(r).toMatchObject({ inserted: 1, duplicates: 1, invalid: 1 });
    expect(r.errors[0]).toMatchObject({ line: 2 });
    expect(r.errors[0]!.reason).toMatch(/testCases/);
    expect((await t.prisma.task.findFirstOrThrow()).split).toBe('test');
    await t.prisma.task.deleteMany({});
  });
});
