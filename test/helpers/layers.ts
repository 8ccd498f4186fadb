// The layering rules as the folders' READMEs state them, checked against the source by test/layers.test.ts:
// which files may import which ("May import:" lines), and which files may write through Prisma. Source is
// parsed with the TypeScript compiler, so comments, strings and look-alike calls (a Map's delete) never count.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import ts from 'typescript';

/** Folders of code that ships, and the fixtures and benchmarks held to the same writes; test/ is read for its imports only. */
export const SOURCE_FOLDERS = ['tasks', 'prisma', 'trainer', 'bot', 'bin', 'bench', 'testing'] as const;
export const TOP_FOLDERS: readonly string[] = [...SOURCE_FOLDERS, 'test'];
/** The layers bottom to top (each README's "May import:" line builds on the one before): "below" in a README means earlier here. */
export const LAYERS: readonly string[] = ['tasks', 'prisma', 'trainer', 'bot', 'bin'];
const SOURCE_EXTENSIONS = /\.(c|m)?(t|j)s$/;
/** Generated or installed code, not ours to check (prisma/generated is written by `prisma generate`). */
const SKIPPED = new Set(['node_modules', 'prisma/generated']);

export interface SourceFile {
  /** Relative to the repository root, with forward slashes. */
  path: string;
  text: string;
}

export interface Violation {
  file: string;
  line: number;
  message: string;
}

export const formatViolation = (v: Violation): string => `${v.file}:${v.line}: ${v.message}`;

export interface ImportRule {
  /** The folder whose README states the rule; it covers the files below it that no nearer README covers. */
  folder: string;
  /** Folders its files may import besides their own (relative to the root, no trailing slash). */
  allowed: string[];
  /** Folders or files its files never import, though `allowed` reaches them ("Never imports ..."). */
  forbidden: string[];
  /** The only folders outside it whose files import it ("Imported by ..."); undefined: whoever may. */
  importedBy?: string[];
  /** The line as written, for messages. */
  text: string;
}

/** Source files at the repository's top, which only "anything" rules reach. */
const ROOT_FILES = ['vitest.config.ts'];

const inside = (path: string, folder: string) => path === folder || path.startsWith(`${folder}/`);

/**
 * Reads a README's "May import:" line, every sentence of it; undefined when it has none. The first sentence says
 * what may be imported (a parenthesis there may only follow "nothing of ours", which it explains); the others are
 * "Never imports `x`, nor `y`" (every path named in it, parentheses included, is off limits), "Imported by `a/`,
 * `b/`" (no other folder imports this one) and "Everything else may import it". Anything else is refused, so a
 * line cannot say more than the check holds the code to.
 */
export function parseMayImport(folder: string, readme: string): ImportRule | undefined {
  const line = /^May import:\s*(.*)$/m.exec(readme)?.[1];
  if (line === undefined) return undefined;
  const refuse = (why: string) =>
    new Error(`${folder}/README.md: cannot read its "May import:" line (${why}): ${line}`);
  const [first, ...rest] = line
    .split(/\.(?:\s+|$)/)
    .map((x) => x.trim())
    .filter((x) => x !== '');
  if (first === undefined) throw refuse('it is empty');
  const paths = (text: string) => [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replace(/\/+$/, ''));
  const lower = first.toLowerCase();
  if (first.includes('(') && !/^nothing of ours \([^`()]*\)$/.test(lower))
    throw refuse('a parenthesis in what it may import');
  const named = paths(first);
  let allowed: string[];
  if (lower.startsWith('nothing')) allowed = [];
  else if (lower === 'everything') allowed = [...TOP_FOLDERS];
  // "Anything" takes in the repository's own top-level files too (vitest.config.ts), named by their file name.
  else if (lower.startsWith('anything except') && /^anything except (`[^`]+`[\s,]*(and\s+)?)+$/.test(first))
    allowed = [...TOP_FOLDERS.filter((f) => !named.some((n) => inside(f, n))), ...ROOT_FILES];
  else if (lower.startsWith('anything below') && named.length === 1 && LAYERS.includes(named[0]!))
    allowed = LAYERS.slice(0, LAYERS.indexOf(named[0]!));
  else if (named.length > 0 && /^(`[^`]+`[\s,]*(and\s+)?)+$/.test(first)) allowed = named;
  else throw refuse(`"${first}"`);
  const rule: ImportRule = { folder, allowed, forbidden: [], text: `May import: ${line}` };
  for (const sentence of rest) {
    if (/^never imports `/i.test(sentence)) rule.forbidden.push(...paths(sentence));
    else if (/^imported by (`[^`]+`[\s,]*(and\s+)?)+$/i.test(sentence)) rule.importedBy = paths(sentence);
    else if (!/^everything else may import it$/i.test(sentence)) throw refuse(`"${sentence}"`);
  }
  return rule;
}

function walk(root: string, dir: string, visit: (relPath: string) => void): void {
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const rel = posix.join(dir, entry.name);
    if (SKIPPED.has(entry.name) || SKIPPED.has(rel)) continue;
    if (entry.isDirectory()) walk(root, rel, visit);
    else if (entry.isFile()) visit(rel);
  }
}

/** The rule of every folder with a README that has a "May import:" line; each top folder must have one. */
export function loadImportRules(root: string): Map<string, ImportRule> {
  const rules = new Map<string, ImportRule>();
  for (const top of TOP_FOLDERS) {
    walk(root, top, (rel) => {
      if (posix.basename(rel) !== 'README.md') return;
      const folder = posix.dirname(rel);
      const rule = parseMayImport(folder, readFileSync(join(root, rel), 'utf8'));
      if (rule) rules.set(folder, rule);
    });
    if (!rules.has(top)) throw new Error(`${top}/README.md has no "May import:" line`);
  }
  return rules;
}

/** Every TypeScript/JavaScript file under `folders`. */
export function readSource(root: string, folders: readonly string[] = TOP_FOLDERS): SourceFile[] {
  const files: SourceFile[] = [];
  for (const top of folders) {
    walk(root, top, (rel) => {
      if (SOURCE_EXTENSIONS.test(rel)) files.push({ path: rel, text: readFileSync(join(root, rel), 'utf8') });
    });
  }
  return files;
}

/** The Prisma client's model delegates: each `model Name` of the schema is reached as `<client>.name`. */
export function prismaModels(schema: string): Set<string> {
  return new Set([...schema.matchAll(/^model\s+(\w+)\s*\{/gm)].map((m) => m[1]![0]!.toLowerCase() + m[1]!.slice(1)));
}

function parse(file: SourceFile): ts.SourceFile {
  const kind = /\.(c|m)?js$/.test(file.path) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  return ts.createSourceFile(file.path, file.text, ts.ScriptTarget.Latest, true, kind);
}

function visitAll(node: ts.Node, fn: (n: ts.Node) => void): void {
  fn(node);
  ts.forEachChild(node, (child) => visitAll(child, fn));
}

const lineOf = (sf: ts.SourceFile, node: ts.Node) => sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;

const literal = (node: ts.Node | undefined): string | undefined =>
  node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) ? node.text : undefined;

/** Each file is parsed once for its imports, however many checks read them. */
const importsCache = new WeakMap<SourceFile, { specifier: string; line: number }[]>();

/**
 * What a file imports, with the line: `import`/`export ... from`, `import x = require()`, `import('...')` and
 * `require('...')` with a literal specifier, and `import('...')` types. A computed specifier cannot be checked
 * here (the code has a few, all npm packages chosen at run time).
 */
export function importsOf(file: SourceFile): { specifier: string; line: number }[] {
  const cached = importsCache.get(file);
  if (cached) return cached;
  const sf = parse(file);
  const found: { specifier: string; line: number }[] = [];
  visitAll(sf, (node) => {
    let spec: string | undefined;
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) spec = literal(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference))
      spec = literal(node.moduleReference.expression);
    else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(node.expression) && node.expression.text === 'require'))
    )
      spec = literal(node.arguments[0]);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) spec = literal(node.argument.literal);
    if (spec !== undefined) found.push({ specifier: spec, line: lineOf(sf, node) });
  });
  importsCache.set(file, found);
  return found;
}

function ruleFor(path: string, rules: ReadonlyMap<string, ImportRule>): ImportRule | undefined {
  for (let dir = posix.dirname(path); dir !== '.'; dir = posix.dirname(dir)) {
    const rule = rules.get(dir);
    if (rule) return rule;
  }
  return undefined;
}

/**
 * Imports a file's rule does not allow. Only our own files are checked (relative specifiers); npm packages and
 * Node's modules may be imported everywhere. Besides the READMEs' lines, nothing outside bin/ imports bin/
 * (bin/README.md), save the tests of bin/ itself.
 */
export function checkImports(files: readonly SourceFile[], rules: ReadonlyMap<string, ImportRule>): Violation[] {
  const violations: Violation[] = [];
  for (const file of files) {
    const rule = ruleFor(file.path, rules);
    if (!rule) {
      violations.push({ file: file.path, line: 1, message: 'no README above it states what it may import' });
      continue;
    }
    for (const { specifier, line } of importsOf(file)) {
      if (!specifier.startsWith('./') && !specifier.startsWith('../')) continue;
      const target = posix.normalize(posix.join(posix.dirname(file.path), specifier));
      const where = `imports ${target}`;
      if (inside(target, 'bin') && !inside(file.path, 'bin') && !inside(file.path, 'test')) {
        violations.push({
          file: file.path,
          line,
          message: `${where}: nothing outside bin/ imports bin/ (bin/README.md)`,
        });
      } else if (!inside(target, rule.folder) && !rule.allowed.some((f) => inside(target, f))) {
        violations.push({ file: file.path, line, message: `${where}: ${rule.folder}/README.md says "${rule.text}"` });
      } else if (rule.forbidden.some((f) => inside(target, f))) {
        violations.push({ file: file.path, line, message: `${where}: ${rule.folder}/README.md says "${rule.text}"` });
      } else {
        const owner = [...rules.values()].find(
          (r) =>
            r.importedBy &&
            inside(target, r.folder) &&
            !inside(file.path, r.folder) &&
            !r.importedBy.some((f) => inside(file.path, f)),
        );
        if (owner)
          violations.push({
            file: file.path,
            line,
            message: `${where}: ${owner.folder}/README.md says "${owner.text}"`,
          });
      }
    }
  }
  return violations;
}

/** Prisma calls that write rows (called on a model delegate) and the raw statements that may. */
export const WRITE_METHODS: ReadonlySet<string> = new Set([
  'create',
  'createMany',
  'createManyAndReturn',
  'update',
  'updateMany',
  'updateManyAndReturn',
  'upsert',
  'delete',
  'deleteMany',
]);
export const RAW_WRITES: ReadonlySet<string> = new Set(['$executeRaw', '$executeRawUnsafe']);

/** The stores (prisma/*store*.ts) and the migrator are the only writers (prisma/README.md). */
export const mayWrite = (path: string): boolean =>
  /^prisma\/[^/]*store[^/]*\.ts$/.test(path) || path === 'prisma/migrate.ts';

/**
 * Prisma writes outside the stores and the migrator. A delegate is recognised by its name: a write method called
 * on a property named after a schema model (`prisma.session.update(`, `tx.turn.create(`,
 * `this.db.prisma.policyVersion.upsert(`), so a Map's or a Discord thread's `.delete(` never counts. A delegate
 * first put in a variable of its own would be missed; nothing in the code does that. `$executeRaw` and
 * `$executeRawUnsafe` count wherever they are used (called or as a tagged template).
 */
export function checkPrismaWrites(files: readonly SourceFile[], models: ReadonlySet<string>): Violation[] {
  const violations: Violation[] = [];
  for (const file of files) {
    if (mayWrite(file.path)) continue;
    const sf = parse(file);
    visitAll(sf, (node) => {
      if (ts.isPropertyAccessExpression(node) && RAW_WRITES.has(node.name.text)) {
        violations.push({
          file: file.path,
          line: lineOf(sf, node),
          message: `${node.name.text} outside the stores (prisma/README.md)`,
        });
      } else if (
        ts.isCallExpression(node) &&
        ts.isPropertyAccessExpression(node.expression) &&
        WRITE_METHODS.has(node.expression.name.text)
      ) {
        const delegate = node.expression.expression;
        if (ts.isPropertyAccessExpression(delegate) && models.has(delegate.name.text)) {
          const call = `${delegate.name.text}.${node.expression.name.text}`;
          violations.push({
            file: file.path,
            line: lineOf(sf, node.expression.name),
            message: `Prisma write ${call}() outside the stores (prisma/README.md)`,
          });
        }
      }
    });
  }
  return violations;
}

/**
 * Import circles among `files`, each as its files in a cycle's order: every import counts, type-only and
 * dynamic ones included (a type living in the file that imports the other one is still a knot to untie).
 */
export function findCycles(files: readonly SourceFile[]): string[][] {
  const known = new Set(files.map((f) => f.path));
  const edges = new Map<string, string[]>();
  for (const file of files) {
    const targets = importsOf(file)
      .filter(({ specifier }) => specifier.startsWith('./') || specifier.startsWith('../'))
      .map(({ specifier }) => posix.normalize(posix.join(posix.dirname(file.path), specifier)))
      .filter((t) => known.has(t));
    edges.set(file.path, [...new Set(targets)].sort());
  }
  // Tarjan's strongly connected components: a component of two or more files, or a file importing itself, is a circle.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v)!) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = ''; w !== v; ) {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    }
    if (component.length > 1 || edges.get(v)!.includes(v)) cycles.push(component.sort());
  };
  for (const v of [...edges.keys()].sort()) if (!index.has(v)) connect(v);
  return cycles;
}

/** The checks over the repository at `root`: imports and circles everywhere, writes in the source folders. */
export function checkRepository(root: string): { imports: Violation[]; writes: Violation[]; cycles: string[][] } {
  const files = readSource(root);
  const schema = join(root, 'prisma', 'schema.prisma');
  if (!existsSync(schema)) throw new Error(`no Prisma schema at ${schema}`);
  const source = files.filter((f) => SOURCE_FOLDERS.some((top) => inside(f.path, top)));
  return {
    imports: checkImports(files, loadImportRules(root)),
    writes: checkPrismaWrites(source, prismaModels(readFileSync(schema, 'utf8'))),
    cycles: findCycles(files),
  };
}
