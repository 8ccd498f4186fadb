// docs/architecture.md's two walks ("Follow one message", "Follow one training run") name functions that exist:
// each step's file has the function, or the class with the method, that the step names.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const doc = readFileSync(`${root}/docs/architecture.md`, 'utf8');

/** The numbered steps of a section: `file` Name or `file` Class.method. */
function walk(markdown: string, heading: string): { file: string; name: string; member?: string }[] {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  if (start < 0) return [];
  const end = markdown.indexOf('\n## ', start + 1);
  const section = markdown.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/^\d+\. `([^`]+)` (\w+)(?:\.(\w+))?:/gm)].map((m) => ({
    file: m[1]!,
    name: m[2]!,
    ...(m[3] ? { member: m[3] } : {}),
  }));
}

/** Whether `source` declares `name` (a function, class or variable), and `member` in that class when asked. */
function declares(source: string, name: string, member?: string): boolean {
  const sf = ts.createSourceFile('x.ts', source, ts.ScriptTarget.Latest, true);
  for (const node of sf.statements) {
    if (ts.isClassDeclaration(node) && node.name?.text === name) {
      if (!member) return true;
      return node.members.some((m) => m.name !== undefined && ts.isIdentifier(m.name) && m.name.text === member);
    }
    if (member) continue;
    if (ts.isFunctionDeclaration(node) && node.name?.text === name) return true;
    if (
      ts.isVariableStatement(node) &&
      node.declarationList.declarations.some((d) => ts.isIdentifier(d.name) && d.name.text === name)
    )
      return true;
  }
  return false;
}

describe('docs/architecture.md', () => {
  for (const heading of ['Follow one message', 'Follow one training run']) {
    it(`"${heading}" names, step by step, functions that exist in the files it gives`, () => {
      const steps = walk(doc, heading);
      expect(steps.length).toBeGreaterThanOrEqual(5);
      const missing = steps.filter(
        (s) =>
          !existsSync(`${root}/${s.file}`) || !declares(readFileSync(`${root}/${s.file}`, 'utf8'), s.name, s.member),
      );
      expect(missing).toEqual([]);
    });
  }

  it('the check finds a missing function, a missing method and a step in the wrong file', () => {
    const source = 'export class Engine {\n  receive() {}\n}\nexport function store() {}\nexport const view = () => 1;';
    expect(declares(source, 'Engine', 'receive')).toBe(true);
    expect(declares(source, 'store')).toBe(true);
    expect(declares(source, 'view')).toBe(true);
    expect(declares(source, 'Engine', 'reply')).toBe(false);
    expect(declares(source, 'Other', 'receive')).toBe(false);
    expect(declares(source, 'receive')).toBe(false);
    expect(
      walk(
        '# T\n\n## Walk\n\n1. `a.ts` Engine.receive: in.\n2. `b.ts` store: out.\n\n## Next\n3. `c.ts` x: no.\n',
        'Walk',
      ),
    ).toEqual([
      { file: 'a.ts', name: 'Engine', member: 'receive' },
      { file: 'b.ts', name: 'store' },
    ]);
  });
});
