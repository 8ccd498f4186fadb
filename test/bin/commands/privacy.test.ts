// `sweetloop privacy delete|withdraw` end to end (a real process on a real Postgres database), and the export's
// refusal of the development salt when a Discord bot is configured.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../bot/testing/database.ts';
import { erasedId } from '../../../bot/privacy.ts';
import { builtinTasks } from '../../../tasks/library.ts';
import { importTasks } from '../../../prisma/task-store.ts';
import { runSweetloop, type SweetloopRun } from '../../../bot/testing/sweetloop-cli.ts';


function sweetloop(args: string[], env: Record<string, string>): Promise<SweetloopRun> {
  const base = { ...process.env };
  for (const k of ['DISCORD_TOKEN', 'EXPORT_SALT', 'PRIVACY_KEY', 'DATABASE_URL']) delete base[k];
  return runSweetloop(args, { env: { ...base, LOG_LEVEL: 'warn', ...env }, timeoutMs: 120_000 });
}

describe('sweetloop privacy', () => {
  let t: TestDatabase;
  const dir = mkdtempSync(join(tmpdir(), 'sweetloop-privacy-cli-'));
  const person = '123456789012345678';
  const key = 'cli-test-privacy-key-0123';
  beforeAll(async () => {
    t = await createTestDatabase();
    const [task] = await importTasks(t.prisma, builtinTasks({ kind: 'backend' }).slice(0, 1)).then(() => t.prisma.task.findMany());
    const p = await t.prisma.participant.create({ data: { discordUserId: person, displayName: 'mailer', consentGivenAt: new Date(), banned: true } });
    const s = await t.prisma.session.create({ data: { taskId: task!.id, participantId: p.id, channel: 'discord', status: 'answered', threadId: '223456789012345678' } });
    await t.prisma.turn.create({ data: { sessionId: s.id, index: 0, role: 'human', content: 'A sentence only the mailer wrote.' } });
    await t.prisma.auditLog.create({ data: { actor: person, action: 'consent.accept', target: null } });
    writeFileSync(join(dir, 'cache.jsonl'), '{"text":"A sentence only the mailer wrote."}\n{"text":"kept"}\n');
  });
  afterAll(async () => {
    await t?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('deletes a person by id and prints the receipt; the ban stays under the keyed hash', async () => {
    const r = await sweetloop(['privacy', 'delete', person], { DATABASE_URL: t.url, PRIVACY_KEY: key, CHECKPOINT_DIR: dir, PRIVACY_SCAN_DIRS: dir });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/Deleted: 1 session\(s\) with 1 message\(s\)/);
    expect(r.stdout).toMatch(/Threads NOT deleted .*223456789012345678/);
    expect(await t.prisma.participant.findUnique({ where: { discordUserId: person } })).toBeNull();
    const kept = await t.prisma.participant.findUniqueOrThrow({ where: { discordUserId: erasedId(key, person) } });
    expect(kept.banned).toBe(true);
    expect(kept.displayName).toBeNull();
    expect(await t.prisma.auditLog.count({ where: { actor: person } })).toBe(0);
    expect(readFileSync(join(dir, 'cache.jsonl'), 'utf8')).toBe('{"text":"kept"}\n');
  });

  it('refuses a malformed user id', async () => {
    const r = await sweetloop(['privacy', 'delete', 'alice'], { DATABASE_URL: t.url });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/not a Discord user id/);
  });

  it('export refuses the development salt when a Discord bot is configured, and says how to set one', async () => {
    const r = await sweetloop(['export', '--format', 'jsonl', '--out', join(dir, 'x.jsonl')], { DATABASE_URL: t.url, DISCORD_TOKEN: 'a-secret-bot-token-value' });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/EXPORT_SALT is the development default.*openssl rand/s);
    expect(r.stderr + r.stdout).not.toContain('a-secret-bot-token-value');
  });
});
