// The layers, read from the source (checker: test/helpers/layers.ts). Imports: every file of tasks/, prisma/,
// trainer/, bot/, bin/, bench/ and test/ imports only what the whole "May import:" line of its nearest README
// allows (and what the lines of the folders it imports let it), nothing outside bin/ imports bin/, and no files
// import each other in a circle, even through types. Writes: Prisma writes appear only in prisma/*store*.ts and
// prisma/migrate.ts. The write rule covers every source folder, testing/ and bench/ included: fixtures and
// benchmarks that need rows make them through the stores, so a test never starts from a row production could
// not have written. test/ is outside it: tests plant rows directly on purpose (rows a store would refuse, a
// crash half-way through a write) to check how the code reads them.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  checkImports,
  checkPrismaWrites,
  checkRepository,
  findCycles,
  formatViolation,
  loadImportRules,
  parseMayImport,
  prismaModels,
  type SourceFile,
  type Violation,
} from './helpers/layers.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const rules = loadImportRules(root);
const models = new Set(['session', 'turn', 'policyVersion']);
const at = (vs: Violation[]) => vs.map((v) => `${v.file}:${v.line}`);
const lines = (...ls: string[]) => ls.join('\n');

describe('the "May import:" lines', () => {
  it('reads every phrasing the READMEs use', () => {
    const allowed = (line: string) => parseMayImport('x', `# x\n\nSome words.\n\nMay import: ${line}\n`)?.allowed;
    expect(allowed('nothing of ours (only npm packages and Node). Everything else may import it.')).toEqual([]);
    expect(allowed('`tasks/`. Imported by `trainer/`, `bot/`, `bin/`.')).toEqual(['tasks']);
    expect(allowed('`tasks/`, `prisma/`, `bot/`.')).toEqual(['tasks', 'prisma', 'bot']);
    expect(allowed('`tasks/`, `trainer/model/`.')).toEqual(['tasks', 'trainer/model']);
    expect(allowed('everything. Imported by `test/`.')).toEqual([
      'tasks',
      'prisma',
      'trainer',
      'bot',
      'bin',
      'bench',
      'testing',
      'test',
    ]);
    expect(allowed('anything except `test/`.')).toEqual([
      'tasks',
      'prisma',
      'trainer',
      'bot',
      'bin',
      'bench',
      'testing',
      'vitest.config.ts',
    ]);
    expect(allowed('anything below `bin/`.')).toEqual(['tasks', 'prisma', 'trainer', 'bot']);
    expect(parseMayImport('x', '# x\n\nNo rule here.\n')).toBeUndefined();
    // The whole line is read: the sentences after the first are rules too, parentheses included.
    const rule = (line: string) => parseMayImport('x', `May import: ${line}\n`)!;
    expect(rule('`tasks/`. Imported by `trainer/`, `bot/`, `test/`.')).toMatchObject({
      allowed: ['tasks'],
      forbidden: [],
      importedBy: ['trainer', 'bot', 'test'],
    });
    expect(
      rule('`tasks/`, `bot/`. Never imports `bin/`, nor the channels that call it (`bot/discord/`, `bot/console.ts`).'),
    ).toMatchObject({ forbidden: ['bin', 'bot/discord', 'bot/console.ts'] });
    // A parenthesis narrowing what may be imported, or a sentence the check cannot hold the code to, is refused.
    expect(() => rule('`tasks/`, `prisma/` (types and errors), `bot/`.')).toThrow(/parenthesis/);
    expect(() => rule('anything except `test/` (shared fixtures live in `testing/`).')).toThrow(/parenthesis/);
    expect(() => rule('`tasks/`. Nothing here knows about the database.')).toThrow(/Nothing here knows/);
    expect(() => parseMayImport('x', 'May import: whatever seems right.')).toThrow(/x\/README.md: cannot read/);
  });

  it('come from each top folder and from the nested folders that state their own', () => {
    expect([...rules.keys()].sort()).toEqual(
      expect.arrayContaining([
        'bench',
        'bin',
        'bot',
        'bot/discord',
        'testing',
        'prisma',
        'tasks',
        'test',
        'trainer',
        'trainer/model',
        'trainer/recipes',
      ]),
    );
    expect(rules.get('tasks')!.allowed).toEqual([]);
    expect(rules.get('trainer/model')!.allowed).toEqual(['tasks']);
    expect(rules.get('testing')!.allowed).toEqual(['tasks', 'prisma', 'trainer', 'bot']);
    expect(rules.get('test')!.allowed).not.toContain('bench');
  });
});

describe('the source', () => {
  const { imports, writes, cycles } = checkRepository(root);

  it('imports only what its folder allows, and nothing outside bin/ imports bin/', () => {
    expect(imports.map(formatViolation)).toEqual([]);
  });

  it('writes through Prisma only in the stores and the migrator', () => {
    expect(writes.map(formatViolation)).toEqual([]);
  });

  it('has no import circle, type-only imports included', () => {
    expect(cycles).toEqual([]);
  });
});

describe('the checker', () => {
  it('reports planted imports against the layers with their file and line', () => {
    const planted: SourceFile[] = [
      {
        path: 'tasks/planted.ts',
        text: lines(
          "import { buildDialogue } from './protocol.ts';",
          "import pg from 'pg';",
          "import { SessionEngine } from '../bot/engine.ts';",
          "// import { x } from '../bot/engine.ts' in a comment does not count",
          'const s = "import(\'../bot/engine.ts\')";',
        ),
      },
      {
        path: 'trainer/model/planted.ts',
        text: lines(
          "type Agent = import('../../tasks/agent.ts').Agent;",
          'export async function f() {',
          "  const { rewardPairs } = await import('../pairs.ts');",
          '}',
        ),
      },
      {
        path: 'trainer/recipes/planted.ts',
        text: "import { LoadedPolicy } from '../model/loaded-policy.ts';\nimport { PRESETS } from '../presets.ts';",
      },
      { path: 'bot/discord/planted.ts', text: "export { loadAgent } from '../../trainer/policies/agent-for.ts';" },
      { path: 'testing/planted.cjs', text: "'use strict';\nconst { loadConfig } = require('../bin/config.ts');" },
      { path: 'bot/planted-fixture.ts', text: "import { freePort } from '../testing/wait.ts';" },
      {
        path: 'bench/planted.ts',
        text: "import { Terminal } from '../test/helpers/terminal.ts';\nimport { readFileSync } from 'node:fs';",
      },
      {
        path: 'bin/planted.ts',
        text: "import { main } from './cli.ts';\nimport { SessionEngine } from '../bot/engine.ts';",
      },
      {
        path: 'bot/session/planted.ts',
        text: "import { DiscordBot } from '../discord/bot.ts';\nimport { limits } from '../limits.ts';",
      },
      {
        path: 'test/planted.test.ts',
        text: "import { buildProgram } from '../bin/cli.ts';\nimport { heldOutGames } from '../bench/noise.ts';",
      },
    ];
    const found = checkImports(planted, rules);
    expect(at(found)).toEqual([
      'tasks/planted.ts:3',
      'trainer/model/planted.ts:3',
      'trainer/recipes/planted.ts:2',
      'bot/discord/planted.ts:1',
      'testing/planted.cjs:2',
      'bot/planted-fixture.ts:1',
      'bench/planted.ts:1',
      'bot/session/planted.ts:1',
      'test/planted.test.ts:2',
    ]);
    expect(formatViolation(found[0]!)).toBe(
      'tasks/planted.ts:3: imports bot/engine.ts: tasks/README.md says "May import: nothing of ours (only npm packages and Node). Everything else may import it."',
    );
    expect(found[4]!.message).toMatch(/imports bin\/config\.ts: nothing outside bin\/ imports bin\//);
  });

  it('reports an import from a folder its "Imported by" sentence leaves out', () => {
    const own = new Map(
      Object.entries({ lib: 'nothing of ours. Imported by `app/`.', app: '`lib/`.', tool: '`lib/`.' }).map(([f, l]) => [
        f,
        parseMayImport(f, `May import: ${l}\n`)!,
      ]),
    );
    const planted: SourceFile[] = [
      { path: 'app/main.ts', text: "import { x } from '../lib/x.ts';" },
      { path: 'tool/run.ts', text: "import { x } from '../lib/x.ts';" },
      { path: 'lib/x.ts', text: "import { y } from './y.ts';" },
    ];
    expect(checkImports(planted, own).map(formatViolation)).toEqual([
      'tool/run.ts:1: imports lib/x.ts: lib/README.md says "May import: nothing of ours. Imported by `app/`."',
    ]);
  });

  it('reports a planted Prisma write outside a store with its file and line, and no look-alike', () => {
    const planted: SourceFile[] = [
      {
        path: 'bot/planted.ts',
        text: lines(
          'export async function planted(ctx: any, tx: any, cache: Map<string, number>, thread: any, client: any) {',
          "  cache.delete('k');",
          "  await thread.delete('asked by the person');",
          "  await ctx.prisma.session.update({ where: { id: 'x' }, data: { threadId: 't' } });",
          '  await tx.turn.create({ data: {} });',
          '  await ctx.prisma.$executeRaw`DELETE FROM "Turn"`;',
          '  await client.chat.completions.create({});',
          '  // prisma.session.delete({ where: { id } }) in a comment does not count',
          "  const text = 'prisma.session.delete()';",
          '  await ctx.prisma',
          '    .policyVersion',
          "    .delete({ where: { id: 'x' } });",
          '  return ctx.prisma.session.findMany();',
          '}',
        ),
      },
      { path: 'prisma/session-store.ts', text: 'export const f = (p: any) => p.session.update({});' },
      { path: 'prisma/migrate.ts', text: "export const g = (p: any) => p.$executeRawUnsafe('SELECT 1');" },
      { path: 'prisma/db.ts', text: "export const h = (p: any) => p.$executeRawUnsafe('TRUNCATE x');" },
      { path: 'trainer/planted.ts', text: 'export const i = (p: any) => p.policyVersion.upsert({});' },
    ];
    const found = checkPrismaWrites(planted, models);
    expect(found.map(formatViolation)).toEqual([
      'bot/planted.ts:4: Prisma write session.update() outside the stores (prisma/README.md)',
      'bot/planted.ts:5: Prisma write turn.create() outside the stores (prisma/README.md)',
      'bot/planted.ts:6: $executeRaw outside the stores (prisma/README.md)',
      'bot/planted.ts:12: Prisma write policyVersion.delete() outside the stores (prisma/README.md)',
      'prisma/db.ts:1: $executeRawUnsafe outside the stores (prisma/README.md)',
      'trainer/planted.ts:1: Prisma write policyVersion.upsert() outside the stores (prisma/README.md)',
    ]);
  });

  it('finds a planted circle of type-only imports, and a file importing itself, and no circle where there is none', () => {
    const planted: SourceFile[] = [
      {
        path: 'bot/report/upper.ts',
        text: "import { lower } from './lower.ts';\nexport interface Shape { x: number }\nexport const upper = lower;",
      },
      {
        path: 'bot/report/lower.ts',
        text: "import type { Shape } from './upper.ts';\nexport const lower = (s: Shape) => s.x;",
      },
      { path: 'tasks/a.ts', text: "export async function a() { return (await import('./b.ts')).b; }" },
      { path: 'tasks/b.ts', text: "export const b = 1;\ntype C = import('./c.ts').C;\nexport type { C };" },
      { path: 'tasks/c.ts', text: "export type C = number;\nexport type Self = import('./c.ts').C;" },
    ];
    expect(findCycles(planted)).toEqual([['bot/report/lower.ts', 'bot/report/upper.ts'], ['tasks/c.ts']]);
    expect(findCycles(planted.slice(2, 4))).toEqual([]);
  });

  it("knows the delegates by the schema's model names", () => {
    expect([...prismaModels('model Session {\n}\nmodel PolicyVersion {\n}\nenum TurnRole {\n}\n')]).toEqual([
      'session',
      'policyVersion',
    ]);
  });
});
