// The README is the manual: its configuration table and dependency list must match the code.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { describeConfig } from '../bin/config.ts';
import { TABLE_END, TABLE_START, configTable } from '../bin/readme-config.ts';

const readme = readFileSync('README.md', 'utf8');

function section(title: string): string {
  const start = readme.indexOf(`\n## ${title}\n`);
  expect(start, `README has a "## ${title}" section`).toBeGreaterThanOrEqual(0);
  const next = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, next < 0 ? undefined : next);
}

describe('README.md', () => {
  it('gives the set-up and test commands', () => {
    for (const cmd of ['npm ci', 'npm start', 'npm test']) expect(readme).toMatch(new RegExp(`^ {4}${cmd}\\b`, 'm'));
  });

  it('has a configuration table listing every variable, as bin/config.ts describes it', () => {
    const table = readme.slice(readme.indexOf(TABLE_START) + TABLE_START.length, readme.indexOf(TABLE_END)).trim();
    for (const { variable } of describeConfig()) expect(table, `${variable} (run: npm run readme:config)`).toContain(`| \`${variable}\` |`);
    expect(table, 'the table is stale: run npm run readme:config').toBe(configTable());
  });

  it('explains why each dependency in package.json is there', () => {
    const deps = section('Dependencies and why');
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as Record<string, Record<string, string> | undefined>;
    for (const group of ['dependencies', 'optionalDependencies', 'devDependencies']) {
      for (const name of Object.keys(pkg[group] ?? {})) expect(deps, `${group}: ${name} (add a line to README "Dependencies and why")`).toContain(`\`${name}\``);
    }
  });

  it('has the architecture diagram, the Prisma offline notes and the Docker notes', () => {
    expect(section('Architecture')).toMatch(/```\n[\s\S]*prisma\/[\s\S]*```/);
    expect(readme).toMatch(/\n### Prisma offline\n/);
    expect(section('Docker')).toMatch(/not available on the machines/);
  });
});
