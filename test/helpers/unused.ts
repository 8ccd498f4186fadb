// Dead code, found from the source by test/unused.test.ts: files nothing reaches from an entry point, and exports
// no other file imports and their own file never uses. Parsed with the TypeScript compiler (no type checking),
// like test/helpers/layers.ts: an import, a re-export, `export *`, a dynamic import (its destructured names), an
// `import()` type, `require()` and a string naming a file (a worker's URL, a script spawned by path) all count.
import { posix } from 'node:path';
import ts from 'typescript';
import type { SourceFile } from './layers.ts';

export interface Unused {
  /** Files no entry point reaches. */
  files: string[];
  /** `path#name`: exports nothing imports and their own file does not use either. */
  exports: string[];
}

interface Exported {
  /** The name inside the file (what `export { a as b }` calls `a`), for the use-in-file test. */
  local: string;
  /** `export { x } from './y.ts'`: the file and the name it forwards to. */
  from?: { file: string; name: string };
}

interface FileFacts {
  exports: Map<string, Exported>;
  /** Files of `export * from`. */
  stars: string[];
  /** [file, name] pairs this file uses; '*' for all of a file (namespace import, require), '' for a file run by path. */
  uses: [string, string][];
  /** How often each identifier appears in the file. */
  identifiers: Map<string, number>;
}

const SOURCE = /\.(c|m)?(t|j)s$/;

const literal = (node: ts.Node | undefined): string | undefined =>
  node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) ? node.text : undefined;

const exported = (node: ts.Node): boolean =>
  ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);

/** A module specifier (read by the branches above), not a string naming a file. */
const isSpecifier = (node: ts.Node): boolean => {
  const p = node.parent;
  return (
    ts.isImportDeclaration(p) ||
    ts.isExportDeclaration(p) ||
    ts.isExternalModuleReference(p) ||
    (ts.isCallExpression(p) &&
      (p.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(p.expression) && p.expression.text === 'require'))) ||
    (ts.isLiteralTypeNode(p) && ts.isImportTypeNode(p.parent))
  );
};

/** The file a specifier or path string names, if it is one of `known`; tried as written, then with `.ts`. */
export function resolveFile(from: string, spec: string, known: ReadonlySet<string>): string | undefined {
  const local = posix.normalize(posix.join(posix.dirname(from), spec));
  // A bare path string may name a file from the root (`join(ROOT, 'bench/x.ts')`) or beside it (`join(dir, 'x.ts')`).
  const bases = spec.startsWith('./') || spec.startsWith('../') ? [local] : [posix.normalize(spec), local];
  for (const base of bases) {
    for (const candidate of [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, `${base}/index.ts`])
      if (known.has(candidate)) return candidate;
  }
  return undefined;
}

function factsOf(file: SourceFile, known: ReadonlySet<string>): FileFacts {
  const kind = /\.(c|m)?js$/.test(file.path) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const sf = ts.createSourceFile(file.path, file.text, ts.ScriptTarget.Latest, true, kind);
  const facts: FileFacts = { exports: new Map(), stars: [], uses: [], identifiers: new Map() };
  const target = (spec: string | undefined) => (spec === undefined ? undefined : resolveFile(file.path, spec, known));
  const use = (t: string | undefined, name: string) => t && facts.uses.push([t, name]);

  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node)) facts.identifiers.set(node.text, (facts.identifiers.get(node.text) ?? 0) + 1);
    if (ts.isImportDeclaration(node)) {
      const t = target(literal(node.moduleSpecifier));
      const clause = node.importClause;
      if (!clause) use(t, '*');
      else {
        if (clause.name) use(t, 'default');
        const b = clause.namedBindings;
        if (b && ts.isNamespaceImport(b)) use(t, '*');
        if (b && ts.isNamedImports(b)) for (const e of b.elements) use(t, (e.propertyName ?? e.name).text);
      }
    } else if (ts.isExportDeclaration(node)) {
      const t = target(literal(node.moduleSpecifier));
      if (!node.exportClause) {
        if (t) facts.stars.push(t);
      } else if (ts.isNamedExports(node.exportClause)) {
        for (const e of node.exportClause.elements) {
          const inner = (e.propertyName ?? e.name).text;
          facts.exports.set(e.name.text, t ? { local: e.name.text, from: { file: t, name: inner } } : { local: inner });
        }
      } else if (t) use(t, '*');
    } else if (ts.isExportAssignment(node)) {
      facts.exports.set('default', { local: 'default' });
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      use(target(literal(node.moduleReference.expression)), '*');
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      // `const { a, b } = await import('./x.ts')` uses a and b; anything else uses the whole module.
      const t = target(literal(node.arguments[0]));
      let p: ts.Node = node.parent;
      if (ts.isAwaitExpression(p)) p = p.parent;
      if (ts.isVariableDeclaration(p) && ts.isObjectBindingPattern(p.name)) {
        for (const e of p.name.elements)
          use(
            t,
            e.propertyName && ts.isIdentifier(e.propertyName) ? e.propertyName.text : (e.name as ts.Identifier).text,
          );
      } else use(t, '*');
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      const t = target(literal(node.argument.literal));
      const q = node.qualifier;
      use(t, q ? (ts.isIdentifier(q) ? q.text : q.left.getText(sf)) : '*');
    } else if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'require') {
      use(target(literal(node.arguments[0])), '*');
    } else if (literal(node) !== undefined && SOURCE.test(literal(node)!) && !isSpecifier(node)) {
      // new URL('./worker.mjs', import.meta.url), a script path handed to a child process: the file is run, so it
      // is reached, but none of its exports is used by naming it ('' is no export's name).
      use(target(literal(node)), '');
    } else if (exported(node)) {
      const isDefault = (ts.getModifiers(node as ts.HasModifiers) ?? []).some(
        (m) => m.kind === ts.SyntaxKind.DefaultKeyword,
      );
      if (ts.isVariableStatement(node)) {
        for (const d of node.declarationList.declarations)
          if (ts.isIdentifier(d.name)) facts.exports.set(d.name.text, { local: d.name.text });
      } else {
        const name = (node as ts.DeclarationStatement).name;
        if (isDefault) facts.exports.set('default', { local: name && ts.isIdentifier(name) ? name.text : 'default' });
        else if (name && ts.isIdentifier(name)) facts.exports.set(name.text, { local: name.text });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return facts;
}

/**
 * What nothing uses in `files`, starting from `entries` (files run directly: tests, scripts, the command). An
 * entry's exports are its interface to whoever runs it and are not checked.
 */
export function findUnused(files: readonly SourceFile[], entries: ReadonlySet<string>): Unused {
  const known = new Set(files.map((f) => f.path));
  const facts = new Map(files.map((f) => [f.path, factsOf(f, known)]));
  const used = new Map<string, Set<string>>();
  const mark = (file: string, name: string, seen = new Set<string>()): void => {
    const key = `${file}#${name}`;
    const f = facts.get(file);
    if (!f || seen.has(key)) return;
    seen.add(key);
    if (!used.has(file)) used.set(file, new Set());
    used.get(file)!.add(name);
    if (name === '*') {
      for (const e of f.exports.values()) if (e.from) mark(e.from.file, e.from.name, seen);
      for (const s of f.stars) mark(s, '*', seen);
      return;
    }
    const own = f.exports.get(name);
    if (own?.from) mark(own.from.file, own.from.name, seen);
    else if (!own) for (const s of f.stars) mark(s, name, seen);
  };
  for (const [, f] of facts) for (const [file, name] of f.uses) mark(file, name);

  // Reachability: from the entries along every use.
  const reached = new Set<string>();
  const queue = [...entries].filter((e) => known.has(e));
  while (queue.length) {
    const file = queue.pop()!;
    if (reached.has(file)) continue;
    reached.add(file);
    const f = facts.get(file)!;
    for (const [t] of f.uses) queue.push(t);
    for (const s of f.stars) queue.push(s);
    for (const e of f.exports.values()) if (e.from) queue.push(e.from.file);
  }

  const unusedExports: string[] = [];
  for (const [file, f] of facts) {
    if (entries.has(file) || !reached.has(file)) continue;
    const names = used.get(file) ?? new Set();
    if (names.has('*')) continue;
    for (const [name, e] of f.exports) {
      if (names.has(name)) continue;
      // Used in its own file (the declaration is one appearance of the name): the `export` is only extra reach.
      if (!e.from && (f.identifiers.get(e.local) ?? 0) > 1) continue;
      unusedExports.push(`${file}#${name}`);
    }
  }
  return { files: [...known].filter((f) => !reached.has(f)).sort(), exports: unusedExports.sort() };
}
