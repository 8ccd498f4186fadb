import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';

describe('sweetloop --help', () => {
  it('lists every command group with a description', () => {
    const out = execFileSync(process.execPath, ['bin/sweetloop.mjs', '--help'], { encoding: 'utf8' });
    expect(out).toMatch(/Usage: sweetloop/);
    expect(out).toMatch(/db\s+Database: apply migrations/);
  });
});
