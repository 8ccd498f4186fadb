// `sweetloop privacy delete|withdraw` end to end (a real process on a real Postgres database), and the export's
// refusal of the development salt when a Discord bot is configured. The deletion finds a person by identity, never
// by text: a person whose only reply was "yes" leaves every model file and every other person's "yes" as it was.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { erasedId } from '../../../bot/privacy.ts';
import { exportSessions } from '../../../bot/export/export.ts';
import { newTokenSecret } from '../../../bot/dashboard/access.ts';
import { createDashboardToken } from '../../../prisma/dashboard-store.ts';
import { excludeFromTraining } from '../../../prisma/quality-store.ts';
import { builtinTasks } from '../../../tasks/library.ts';
import { importTasks } from '../../../prisma/task-store.ts';
import { runSweetloop, type SweetloopRun } from '../../../testing/sweetloop-cli.ts';

function sweetloop(args: string[], env: Record<string, string>): Promise<SweetloopRun> {
  const base = { ...process.env };
  for (const k of [
    'DISCORD_TOKEN',
    'EXPORT_SALT',
    'PRIVACY_KEY',
    'DATABASE_URL',
    'CHECKPOINT_DIR',
    'PRIVACY_SCAN_DIRS',
    'ADAPTERS_DIR',
    'MODELS_DIR',
  ])
    delete base[k];
  return runSweetloop(args, { env: { ...base, LOG_LEVEL: 'warn', ...env }, timeoutMs: 120_000 });
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}
const digests = (dir: string) =>
  Object.fromEntries(filesUnder(dir).map((f) => [f, createHash('sha256').update(readFileSync(f)).digest('hex')]));
const ab = (b: Buffer) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
const jsonLines = (path: string) => readFileSync(path, 'utf8').trim().split('\n');

describe('sweetloop privacy', () => {
  let t: TestDatabase;
  const dir = mkdtempSync(join(tmpdir(), 'sweetloop-privacy-cli-'));
  const ck = join(dir, 'checkpoints');
  const exportsDir = join(dir, 'exports');
  const person = '123456789012345678';
  const other = '123456789012345699';
  const key = 'cli-test-privacy-key-0123';
  const salt = 'cli-test-export-salt-0123';
  const sessions = { her: '', other: '' };
  beforeAll(async () => {
    t = await createTestDatabase();
    const [task] = await importTasks(t.prisma, builtinTasks({ kind: 'backend' }).slice(0, 1)).then(() =>
      t.prisma.task.findMany(),
    );
    const consent = { consentGivenAt: new Date() };
    const p = await t.prisma.participant.create({
      data: { discordUserId: person, displayName: 'mailer', banned: true, ...consent },
    });
    const o = await t.prisma.participant.create({
      data: { discordUserId: other, displayName: 'yessayer', ...consent },
    });
    // Her only reply is "yes"; the other person says it too, and quotes her.
    const play = async (participantId: string, reply: string, threadId: string, score: number) => {
      const s = await t.prisma.session.create({
        data: {
          taskId: task!.id,
          participantId,
          channel: 'discord',
          status: 'answered',
          threadId,
          turnCount: 2,
          answer: task!.hiddenReference,
          endedAt: new Date(),
        },
      });
      await t.prisma.turn.createMany({
        data: [
          { sessionId: s.id, index: 0, role: 'agent', content: 'Should negative amounts count as zero?' },
          { sessionId: s.id, index: 1, role: 'human', content: reply },
          { sessionId: s.id, index: 2, role: 'agent', content: `I WANT TO ANSWER:\n${task!.hiddenReference}` },
        ],
      });
      await t.prisma.evaluation.create({
        data: {
          sessionId: s.id,
          score,
          success: score === 1,
          testsPassed: 0,
          testsTotal: 0,
          detail: {},
          evaluatorVersion: 'test',
        },
      });
      return s.id;
    };
    sessions.her = await play(p.id, 'yes', '223456789012345678', 1);
    sessions.other = await play(o.id, 'yes. She said "yes" too, yes.', '223456789012345699', 0.5);
    await t.prisma.auditLog.create({ data: { actor: person, action: 'consent.accept', target: null } });
    // Models: one trained on her session, one on the other's only.
    for (const [name, id] of [
      ['trained-on-her', sessions.her],
      ['trained-on-other', sessions.other],
    ] as const) {
      const run = await t.prisma.trainingRun.create({
        data: { algorithm: 'sweet', config: {}, dataSnapshot: { sessions: [{ id, reward: 1 }] } },
      });
      await t.prisma.policyVersion.create({
        data: { name, algorithm: 'sweet', checkpointPath: join(ck, name), trainingRunId: run.id },
      });
    }
    // What she did as an operator names her: a study, a dashboard token, another person's exclusion from training.
    await t.prisma.study.create({ data: { name: 'her-study', seed: 1, createdBy: person } });
    const secret = newTokenSecret();
    await createDashboardToken(t.prisma, person, {
      role: 'operator',
      guildId: null,
      tokenSha256: secret.sha256,
      prefix: secret.prefix,
    });
    await excludeFromTraining(t.prisma, person, other, 'says yes to everything');
    await t.prisma.trainingExclusion.create({
      data: { participantId: p.id, excludedBy: 'cli', reason: 'her reason: yes' },
    });

    // A checkpoint whose every file holds "yes", and a run's training data beside it: never touched.
    const run = join(ck, 'trained-on-her');
    mkdirSync(run, { recursive: true });
    const header = Buffer.from(JSON.stringify({ yes: { dtype: 'U8', shape: [3], data_offsets: [0, 3] } }));
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(header.length));
    writeFileSync(join(run, 'model.safetensors'), Buffer.concat([len, header, Buffer.from('yes')]));
    writeFileSync(join(run, 'adapter_model.safetensors'), Buffer.concat([len, header, Buffer.from('yes')]));
    writeFileSync(
      join(run, 'tokenizer.json'),
      JSON.stringify({ model: { type: 'BPE', vocab: { yes: 0, no: 1 }, merges: ['y es'] } }),
    );
    writeFileSync(join(run, 'config.json'), JSON.stringify({ architectures: ['LlamaForCausalLM'], note: 'yes' }));
    writeFileSync(join(run, 'adapter_config.json'), JSON.stringify({ r: 8, note: 'yes' }));
    writeFileSync(join(run, 'actor-pairs.jsonl'), JSON.stringify({ session_id: sessions.her, chosen: 'yes' }) + '\n');

    // Real exports of both sessions in every format.
    mkdirSync(exportsDir, { recursive: true });
    await exportSessions(t.prisma, { format: 'jsonl', salt }, join(exportsDir, 'all.jsonl'));
    await exportSessions(t.prisma, { format: 'parquet', salt }, join(exportsDir, 'all.parquet'));
    await exportSessions(t.prisma, { format: 'hf', salt }, join(exportsDir, 'hf'));
    await exportSessions(
      t.prisma,
      { format: 'sweet-rl', salt, filters: { kind: 'backend' } },
      join(exportsDir, 'sweet.jsonl'),
    );
  });
  afterAll(async () => {
    await t?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('deletes a person whose only reply was "yes" by identity: model files byte-identical, the other person\'s rows kept, hers gone, models trained on her listed', async () => {
    const checkpointsBefore = digests(ck);
    const otherJsonl = jsonLines(join(exportsDir, 'all.jsonl')).filter(
      (l) => JSON.parse(l).session.id === sessions.other,
    );
    const otherSweet = jsonLines(join(exportsDir, 'sweet.jsonl')).filter(
      (l) => JSON.parse(l).session_id === sessions.other,
    );
    expect(otherJsonl).toHaveLength(1);
    expect(otherSweet).toHaveLength(1);
    expect(jsonLines(join(exportsDir, 'sweet.jsonl'))).toHaveLength(2);

    // The scanned folder holds the checkpoints too: they are fenced off all the same.
    const r = await sweetloop(['privacy', 'delete', person], {
      DATABASE_URL: t.url,
      PRIVACY_KEY: key,
      EXPORT_SALT: salt,
      CHECKPOINT_DIR: ck,
      PRIVACY_SCAN_DIRS: dir,
    });
    // Model files and the run's own data, byte for byte.
    expect(digests(ck)).toEqual(checkpointsBefore);
    // Exports: her rows gone, the other person's (with its "yes") kept, byte for byte where the format allows.
    expect(jsonLines(join(exportsDir, 'all.jsonl'))).toEqual(otherJsonl);
    expect(jsonLines(join(exportsDir, 'sweet.jsonl'))).toEqual(otherSweet);
    for (const f of [join(exportsDir, 'all.parquet'), ...filesUnder(join(exportsDir, 'hf', 'data'))]) {
      const rows = await parquetReadObjects({ file: ab(readFileSync(f)) });
      expect(
        rows.map((x) => x.session_id),
        f,
      ).toEqual([sessions.other]);
      expect((rows[0]!.turns as { content: string }[]).map((x) => x.content)).toContain(
        'yes. She said "yes" too, yes.',
      );
    }
    expect(readFileSync(join(exportsDir, 'hf', 'README.md'), 'utf8')).toMatch(/num_examples: 1\n/);

    // Database: her rows gone or pseudonymised, the other person's intact.
    expect(await t.prisma.session.count({ where: { id: sessions.her } })).toBe(0);
    expect(
      (await t.prisma.turn.findMany({ where: { sessionId: sessions.other, role: 'human' } })).map((x) => x.content),
    ).toEqual(['yes. She said "yes" too, yes.']);
    expect(await t.prisma.participant.findUnique({ where: { discordUserId: person } })).toBeNull();
    const hash = erasedId(key, person);
    const kept = await t.prisma.participant.findUniqueOrThrow({
      where: { discordUserId: hash },
      include: { trainingExclusion: true },
    });
    expect(kept.banned).toBe(true);
    expect(kept.displayName).toBeNull();
    expect(kept.trainingExclusion).toBeNull();
    expect((await t.prisma.study.findUniqueOrThrow({ where: { name: 'her-study' } })).createdBy).toBe(hash);
    expect((await t.prisma.dashboardToken.findMany()).map((x) => x.createdBy)).toEqual([hash]);
    const otherP = await t.prisma.participant.findUniqueOrThrow({
      where: { discordUserId: other },
      include: { trainingExclusion: true },
    });
    expect(otherP.trainingExclusion).toMatchObject({ excludedBy: hash, reason: 'says yes to everything' });
    expect(await t.prisma.auditLog.count({ where: { actor: person } })).toBe(0);
    const marks = await t.prisma.policyVersion.findMany({ orderBy: { name: 'asc' } });
    expect(
      marks.map((v) => [v.name, (v.metrics as { trainedOnErasedData?: boolean } | null)?.trainedOnErasedData ?? false]),
    ).toEqual([
      ['trained-on-her', true],
      ['trained-on-other', false],
    ]);
    // Nowhere in the database: her Discord id and her reason.
    const dump = execFileSync('pg_dump', ['--no-owner', t.url], { maxBuffer: 256 * 1024 * 1024 }).toString('utf8');
    expect(dump).toContain('yes. She said');
    expect(dump).not.toContain(person);
    expect(dump).not.toContain('her reason: yes');
    // The receipt: what was done, and the model trained on her for an operator.
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.stdout).toMatch(/Deleted: 1 session\(s\) with 3 message\(s\)/);
    expect(r.stdout).toMatch(/Threads NOT deleted .*223456789012345678/);
    expect(r.stdout).toMatch(/Export files rewritten without your rows: 5\./); // jsonl, parquet, hf data and card, sweet-rl
    expect(r.stdout).toMatch(
      /Model versions trained on your sessions.*their files are not changed.*: trained-on-her\./,
    );
    expect(r.stdout).not.toContain('trained-on-other');
  });

  it('names a file whose rows carry no session id (an export of an older version), leaves it as it was and exits 1', async () => {
    const legacy = join(dir, 'legacy');
    mkdirSync(legacy);
    const text =
      '{"task":{"problem_description":"p","ground_truth":"g"},"dialogue_history":[{"role":"user","content":"yes"}],"answer":"a","reward":1}\n';
    writeFileSync(join(legacy, 'old.sweet-rl.jsonl'), text);
    await t.prisma.participant.create({ data: { discordUserId: '123456789012345611', consentGivenAt: new Date() } });
    const r = await sweetloop(['privacy', 'delete', '123456789012345611'], {
      DATABASE_URL: t.url,
      PRIVACY_KEY: key,
      EXPORT_SALT: salt,
      CHECKPOINT_DIR: ck,
      PRIVACY_SCAN_DIRS: legacy,
    });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(
      /could NOT be fully cleaned.*old\.sweet-rl\.jsonl: 1 row\(s\) carry no session id or pseudonym/s,
    );
    expect(readFileSync(join(legacy, 'old.sweet-rl.jsonl'), 'utf8')).toBe(text);
  });

  it('refuses a malformed user id', async () => {
    const r = await sweetloop(['privacy', 'delete', 'alice'], { DATABASE_URL: t.url });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/not a Discord user id/);
  });

  it('export refuses the development salt when a Discord bot is configured, and says how to set one', async () => {
    const r = await sweetloop(['export', '--format', 'jsonl', '--out', join(dir, 'x.jsonl')], {
      DATABASE_URL: t.url,
      DISCORD_TOKEN: 'a-secret-bot-token-value',
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/EXPORT_SALT is the development default.*openssl rand/s);
    expect(r.stderr + r.stdout).not.toContain('a-secret-bot-token-value');
  });
});
