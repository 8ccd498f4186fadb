// vitest.config.ts lists by hand the tests that need Postgres, so that `npm run test:unit` can leave them out;
// this holds the list to the code: every test file that opens a test database (itself, or by calling a fixture
// of test/ or testing/ that opens one) must be listed, or test:unit would fail on a machine without Postgres.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import picomatch from 'picomatch';
import { describe, expect, it } from 'vitest';
import { MACHINE_TESTS } from '../vitest.config.ts';

const ROOT = resolve(import.meta.dirname, '..');
const OPENS_DATABASE = ['createTestDatabase', 'createDatabaseBefore', 'databaseBeforeMigration'];

function files(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    return statSync(join(ROOT, path)).isDirectory() ? files(path) : [path];
  });
}

const read = (f: string) => readFileSync(join(ROOT, f), 'utf8');
const calls = (text: string, names: readonly string[]) => names.some((n) => new RegExp(`\\b${n}\\b`).test(text));

/** The fixtures' exported names whose declaration opens a database, directly or through another such name. */
function databaseEntries(): string[] {
  const fixtures = [...files('test'), ...files('testing')].filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
  const names = [...OPENS_DATABASE];
  for (let grew = true; grew; ) {
    grew = false;
    for (const f of fixtures) {
      for (const chunk of read(f).split(/^(?=export )/m)) {
        const name = /^export (?:async )?(?:function|class|const) (\w+)/.exec(chunk)?.[1];
        if (name && !names.includes(name) && calls(chunk, names)) {
          names.push(name);
          grew = true;
        }
      }
    }
  }
  return names;
}

export function testsOpeningDatabases(): string[] {
  const entries = databaseEntries();
  return files('test')
    .filter((f) => f.endsWith('.test.ts') && f !== 'test/machine-tests.test.ts')
    .filter((f) => calls(read(f), entries))
    .sort();
}

describe('MACHINE_TESTS (vitest.config.ts)', () => {
  it('lists every test file that opens a test database', () => {
    const listed = picomatch(MACHINE_TESTS.postgres);
    expect(testsOpeningDatabases().filter((f) => !listed(f))).toEqual([]);
  });

  it("sees through the fixtures: the Discord harness and the trainer's run world open databases", () => {
    expect(databaseEntries()).toEqual(expect.arrayContaining(['BotHarness', 'runWorld']));
    expect(testsOpeningDatabases()).toEqual(
      expect.arrayContaining(['test/bot/discord/backend-session.test.ts', 'test/prisma/policy-store.test.ts']),
    );
  });
});
