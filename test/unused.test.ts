// No dead code (checker: test/helpers/unused.ts): every file is reached from an entry point, and every export is
// imported somewhere or used in its own file. The exceptions below are the only ones, each with its reason.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readSource, type SourceFile } from './helpers/layers.ts';
import { findUnused } from './helpers/unused.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

/** `path#name` or a path: kept although nothing here uses it, and why. */
const EXCEPTIONS: Record<string, string> = {};

/** `npx tsx bench/x.ts`, `node --import tsx bot/y.ts`: a command running a file. */
const RUN =
  /\b(?:tsx|node)(?:\s+--?[\w-]+(?:[= ](?![\w./-]+\.(?:c|m)?[tj]s\b)[^\s`'"]+)?)*\s+([\w./-]+\.(?:c|m)?[tj]s)\b/g;

/** Files run directly: the tests, the config, and every script the package, CI or the images name. */
function entries(files: readonly SourceFile[]): Set<string> {
  const out = new Set(files.filter((f) => /\.test\.ts$/.test(f.path)).map((f) => f.path));
  out.add('vitest.config.ts');
  const pkg = JSON.parse(readFileSync(`${root}/package.json`, 'utf8')) as {
    scripts: Record<string, string>;
    bin: Record<string, string>;
  };
  const named = [...Object.values(pkg.scripts), ...Object.values(pkg.bin)];
  for (const f of readdirSync(root))
    if (/^Dockerfile|^docker-compose/.test(f)) named.push(readFileSync(`${root}/${f}`, 'utf8'));
  if (existsSync(`${root}/.ci/run`)) named.push(readFileSync(`${root}/.ci/run`, 'utf8'));
  for (const text of named)
    for (const m of text.matchAll(/[\w./-]+\.(?:c|m)?[tj]s\b/g)) out.add(m[0].replace(/^\.\//, ''));
  // Scripts a person runs, as the docs, the compose files and the scripts' own usage lines write them.
  const docs = [...readSource(root, ['docs']).map((f) => f.text), ...files.map((f) => f.text)];
  for (const dir of ['.', 'docs', 'bench', 'bin', 'bench/credit']) {
    for (const f of readdirSync(`${root}/${dir}`))
      if (/\.(md|ya?ml)$/.test(f)) docs.push(readFileSync(`${root}/${dir}/${f}`, 'utf8'));
  }
  for (const text of docs) for (const m of text.matchAll(RUN)) out.add(m[1]!.replace(/^\.\//, ''));
  return out;
}

describe('dead code', () => {
  const files = [
    ...readSource(root),
    { path: 'vitest.config.ts', text: readFileSync(`${root}/vitest.config.ts`, 'utf8') },
  ];
  const found = findUnused(files, entries(files));
  const excepted = (x: string) => x in EXCEPTIONS;

  it('every file is reached from an entry point', () => {
    expect(found.files.filter((f) => !excepted(f))).toEqual([]);
  });

  it('every export is imported somewhere, or used in its own file', () => {
    expect(found.exports.filter((e) => !excepted(e))).toEqual([]);
  });

  it('fails on an unused export planted in the real source, and on a file nothing reaches', () => {
    const planted = files.map((f) =>
      f.path === 'tasks/stats.ts' ? { ...f, text: `${f.text}\nexport const plantedUnused = 1;\n` } : f,
    );
    // The orphan's path is put together so that no string in this file names it (a named path counts as run).
    const orphan = ['bot', 'planted-orphan.ts'].join('/');
    const again = findUnused([...planted, { path: orphan, text: 'export const orphan = 1;' }], entries(files));
    expect(again.exports.filter((e) => !excepted(e))).toEqual(['tasks/stats.ts#plantedUnused']);
    expect(again.files.filter((f) => !excepted(f))).toEqual([orphan]);
  });

  it('lists no exception that is no longer needed', () => {
    expect(Object.keys(EXCEPTIONS).filter((x) => !found.files.includes(x) && !found.exports.includes(x))).toEqual([]);
  });
});

describe('the checker', () => {
  it('reports a planted unused export and file, and counts every way of using one', () => {
    // One file a path: what each uses of the others.
    const planted: SourceFile[] = Object.entries({
      'bin/main.ts': [
        "import { used, type Shape } from '../tasks/a.ts';",
        "import * as all from '../tasks/every.ts';",
        "export { forwarded } from '../tasks/b.ts';",
        "export * from '../tasks/star.ts';",
        'export async function run(s: Shape) {',
        "  const { late } = await import('../tasks/lazy.ts');",
        "  const w = new URL('../tasks/worker.mjs', import.meta.url);",
        "  type T = import('../tasks/typed.ts').Typed;",
        '  return [used, all, late, w] as unknown as T;',
        '}',
      ].join('\n'),
      'tasks/a.ts':
        'export const used = 1;\nexport interface Shape { x: number }\nexport const planted = 2;\nexport const inFile = 3;\nconst twice = inFile * 2;\nvoid twice;',
      'tasks/every.ts': 'export const anything = 1;',
      'tasks/b.ts': 'export const forwarded = 1;\nexport const notForwarded = 2;',
      'tasks/star.ts': 'export const viaStar = 1;',
      'tasks/lazy.ts': 'export const late = 1;\nexport const notLoaded = 2;',
      'tasks/worker.mjs': "import { work } from './work.ts';\nwork();",
      'tasks/work.ts': 'export function work() {}',
      'tasks/typed.ts': 'export type Typed = number;',
      'tasks/orphan.ts': 'export const nobody = 1;',
      'test/main.test.ts': "import { run, viaStar } from '../bin/main.ts';\nvoid run; void viaStar;",
    }).map(([path, text]) => ({ path, text }));
    expect(findUnused(planted, new Set(['test/main.test.ts']))).toEqual({
      files: ['tasks/orphan.ts'],
      exports: [
        'bin/main.ts#forwarded',
        'tasks/a.ts#planted',
        'tasks/b.ts#forwarded',
        'tasks/b.ts#notForwarded',
        'tasks/lazy.ts#notLoaded',
      ],
    });
  });
});
