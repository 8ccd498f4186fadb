#!/usr/bin/env node
// Runs `prisma generate` offline. The Prisma CLI insists on fetching its native schema engine before any
// command, which cannot be downloaded here; `generate` does not actually use it, so a stub executable
// satisfies the check (see docs/architecture.md, "Prisma offline").
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, chmodSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'node_modules', 'prisma', 'build', 'index.js');
if (!existsSync(cli)) {
  console.error('prisma-generate: the prisma package is not installed; run npm ci first');
  process.exit(1);
}
const dir = mkdtempSync(join(tmpdir(), 'sweetloop-prisma-'));
const stub = join(dir, 'schema-engine');
writeFileSync(
  stub,
  '#!/bin/sh\necho "sweetloop: the native schema engine is not used; migrations run through @prisma/schema-engine-wasm" >&2\nexit 1\n',
);
chmodSync(stub, 0o755);
const result = spawnSync(process.execPath, [cli, 'generate', '--schema', join(root, 'prisma', 'schema.prisma')], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: stub, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' },
});
rmSync(dir, { recursive: true, force: true });
process.exit(result.status ?? 1);
