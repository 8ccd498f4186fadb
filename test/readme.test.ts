// The README and the guides in docs/ are the manual: the configuration table and dependency list must match the
// code, and every file they link to must exist.
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  CONFIG_DOC,
  ENV_EXAMPLE,
  TABLE_END,
  TABLE_START,
  configTable,
  describeConfig,
  envExample,
} from '../bin/readme-config.ts';

const readme = readFileSync('README.md', 'utf8');
const architecture = readFileSync('docs/architecture.md', 'utf8');

function section(doc: string, title: string): string {
  const start = doc.indexOf(`\n## ${title}\n`);
  expect(start, `the guide has a "## ${title}" section`).toBeGreaterThanOrEqual(0);
  const next = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, next < 0 ? undefined : next);
}

/** Relative link targets of a markdown file (no URLs, no in-page anchors), resolved from the repository root. */
function linkedFiles(path: string): string[] {
  const text = readFileSync(path, 'utf8');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!.split('#')[0]!)
    .filter((target) => target !== '' && !/^[a-z]+:/i.test(target))
    .map((target) => join(dirname(path), target));
}

describe('README.md', () => {
  it('gives the set-up and test commands', () => {
    for (const cmd of ['npm ci', 'npm start', 'npm test']) expect(readme).toMatch(new RegExp(`^ {4}${cmd}\\b`, 'm'));
  });

  it('stays short enough to read in five minutes: under 250 lines', () => {
    expect(readme.split('\n').length).toBeLessThan(250);
  });

  it('links to guides that exist, and so does every guide in docs/', () => {
    const docs = [
      'README.md',
      ...readdirSync('docs')
        .filter((f) => f.endsWith('.md'))
        .map((f) => join('docs', f)),
    ];
    expect(linkedFiles('README.md')).toContain('docs/README.md');
    for (const doc of docs)
      for (const target of linkedFiles(doc)) expect(existsSync(target), `${doc} links to ${target}`).toBe(true);
  });
});

describe('the guides in docs/', () => {
  it('have a configuration table listing every variable, as bin/config.ts describes it', () => {
    const doc = readFileSync(CONFIG_DOC, 'utf8');
    const table = doc.slice(doc.indexOf(TABLE_START) + TABLE_START.length, doc.indexOf(TABLE_END)).trim();
    for (const { variable } of describeConfig())
      expect(table, `${variable} (run: npm run readme:config)`).toContain(`| \`${variable}\` |`);
    expect(table, 'the table is stale: run npm run readme:config').toBe(configTable());
  });

  it('come with a .env.example generated from the same schema, listing every variable at its default', () => {
    const example = readFileSync(ENV_EXAMPLE, 'utf8');
    expect(example, '.env.example is stale: run npm run readme:config').toBe(envExample());
    for (const { variable } of describeConfig()) expect(example).toMatch(new RegExp(`^# ${variable}=`, 'm'));
    // Parsed as an env file, every line is a comment: copying it changes nothing until a line is uncommented.
    expect(example.split('\n').filter((l) => l.trim() && !l.startsWith('#'))).toEqual([]);
  });

  it('explain why each dependency in package.json is there', () => {
    const deps = section(architecture, 'Dependencies and why');
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as Record<string, Record<string, string> | undefined>;
    for (const group of ['dependencies', 'optionalDependencies', 'devDependencies']) {
      for (const name of Object.keys(pkg[group] ?? {}))
        expect(deps, `${group}: ${name} (add a line to docs/architecture.md "Dependencies and why")`).toContain(
          `\`${name}\``,
        );
    }
  });

  it('have the architecture diagram, the Prisma offline notes and the Docker notes', () => {
    expect(section(architecture, 'Layers')).toMatch(/```\n[\s\S]*prisma\/[\s\S]*```/);
    expect(architecture).toMatch(/\n### Prisma offline\n/);
    expect(section(architecture, 'Docker')).toMatch(/\(docker\.md\)/);
  });
});

describe('prisma/README.md', () => {
  it('lists every store (the only writers of their tables)', () => {
    const doc = readFileSync('prisma/README.md', 'utf8');
    const stores = readdirSync('prisma').filter((f) => f.endsWith('-store.ts'));
    expect(stores.length).toBeGreaterThan(5);
    for (const store of stores)
      expect(doc, `prisma/README.md's table of stores lacks ${store}`).toMatch(
        new RegExp(`^\\| \`${store}\` \\|`, 'm'),
      );
  });
});
