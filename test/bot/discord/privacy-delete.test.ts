// Deletion by identity: after /privacy delete, neither a pg_dump of the whole database nor any export file under
// the scanned folder holds the person's Discord id, their username or any sentence they wrote; model files are
// left byte for byte; their thread is gone from Discord; policy versions trained on their sessions are marked and
// named in the receipt; a ban still holds when they come back.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import type { BackendTask, TaskRecord } from '../../../tasks/model.ts';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { exportSessions } from '../../../bot/export/export.ts';
import { decompressedImage } from '../../helpers/parquet-pages.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

const task = builtinTasks({ kind: 'backend' })[1] as TaskRecord & BackendTask;
const agent = scriptedAgent('scripted', (dialogue) => {
  const mine = dialogue.filter((m) => m.role === 'assistant').length;
  return mine < 2 ? `Question ${mine + 1}: anything unusual about the inputs?` : `I WANT TO ANSWER:\n${task.reference}`;
});

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

describe('/privacy delete', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sweetloop-privacy-'));
  const checkpoints = join(dataDir, 'checkpoints');
  const salt = 'test-export-salt-0123';
  let boss: ReturnType<BotHarness['fake']['user']>;
  const h = new BotHarness({
    tasks: [task],
    agent,
    privacy: { key: 'test-privacy-key-0123456789', dirs: [dataDir], protectedDirs: [checkpoints], exportSalts: [salt] },
    botOptions: (fake) => {
      boss ??= fake.user('boss');
      return { operatorIds: [boss.id] };
    },
  });
  beforeAll(async () => {
    await h.start();
  });
  afterAll(async () => {
    await h.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('leaves no trace of the person in the database, the exports or Discord, and no model file changed', async () => {
    const erin = h.fake.user('zq_erin_7731');
    const other = h.fake.user('frank');
    const sentences = [
      'Negative amounts should count as zero, said the walrus.',
      'Inputs are never empty, pinky promise.',
    ];
    const { threadId } = await h.startSession(erin, 'backend');
    await h.agentMessage(threadId, 1);
    h.fake.say(erin, threadId, sentences[0]!);
    await h.agentMessage(threadId, 2);
    h.fake.say(erin, threadId, sentences[1]!);
    const rating = await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content.includes('How helpful')),
      60_000,
      'rating',
    );
    await h.reply(
      h.fake.click(
        erin,
        rating,
        `rate:${(await h.tdb.prisma.session.findUniqueOrThrow({ where: { threadId } })).id}:4`,
      ),
      (s) => s.kind === 'original' || s.kind === 'edit',
    );
    const otherRun = await h.startSession(other, 'backend');
    await h.agentMessage(otherRun.threadId, 1);
    h.fake.say(other, otherRun.threadId, 'Frank keeps his words.');
    await h.agentMessage(otherRun.threadId, 2);

    // A model trained on her session, whose files hold her words (a tokenizer learns them): marked, never touched.
    const session = await h.tdb.prisma.session.findUniqueOrThrow({ where: { threadId } });
    const run = await h.tdb.prisma.trainingRun.create({
      data: { algorithm: 'sweet', config: {}, dataSnapshot: { sessions: [{ id: session.id, reward: 1 }] } },
    });
    await h.tdb.prisma.policyVersion.create({
      data: { name: 'trained-on-erin', algorithm: 'sweet', trainingRunId: run.id },
    });
    mkdirSync(join(checkpoints, 'run-1'), { recursive: true });
    const modelFiles = {
      'model.safetensors': `weights ${sentences[0]}`,
      'tokenizer.json': JSON.stringify({ vocab: sentences }),
      'pairs.jsonl': `${JSON.stringify({ session_id: session.id, chosen: sentences[1] })}\n`,
    };
    for (const [name, text] of Object.entries(modelFiles)) writeFileSync(join(checkpoints, 'run-1', name), text);
    writeFileSync(join(dataDir, 'unrelated.txt'), `nothing personal, though it quotes: ${sentences[0]}`);
    // An export of both sessions (her words in a line of Frank's would stay: rows go by whose they are).
    await exportSessions(
      h.tdb.prisma,
      { format: 'jsonl', salt, filters: { statuses: ['active', 'answered'] } },
      join(dataDir, 'both.jsonl'),
    );
    expect(readFileSync(join(dataDir, 'both.jsonl'), 'utf8')).toContain(sentences[0]);

    // A ban that must survive the deletion.
    const op = h.fake.user('op');
    await h.reply(
      h.fake.command(op, 'mod', 'ban', { user: erin, reason: 'testing', everywhere: false }, { moderator: true }),
      (s) => s.kind === 'original',
    );

    const del = h.fake.command(erin, 'privacy', 'delete');
    const receipt = await h.reply(del, (s) => s.kind === 'original' && s.content.includes('Deleted:'), 'the receipt');
    expect(receipt.content).toMatch(/Threads removed from Discord: 1\./);
    expect(receipt.content).toMatch(/Export files rewritten without your rows: 1\./);
    expect(receipt.content).toMatch(/Model versions trained on your sessions.*: trained-on-erin\./);

    const dump = execFileSync('pg_dump', ['--no-owner', h.tdb.url], { maxBuffer: 256 * 1024 * 1024 }).toString('utf8');
    expect(dump).toContain('Frank keeps his words.'); // the dump does hold the data of others
    const exported = readFileSync(join(dataDir, 'both.jsonl'), 'utf8');
    for (const needle of [erin.id, erin.username, ...sentences]) {
      expect(dump.includes(needle), `pg_dump holds ${needle}`).toBe(false);
      expect(exported.includes(needle), `the export holds ${needle}`).toBe(false);
    }
    expect(exported).toContain('Frank keeps his words.');
    for (const [name, text] of Object.entries(modelFiles))
      expect(readFileSync(join(checkpoints, 'run-1', name), 'utf8')).toBe(text);
    expect(readFileSync(join(dataDir, 'unrelated.txt'), 'utf8')).toBe(
      `nothing personal, though it quotes: ${sentences[0]}`,
    );
    expect(h.fake.channels.has(threadId)).toBe(false);
    expect(h.fake.channels.has(otherRun.threadId)).toBe(true);
    const marked = await h.tdb.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'trained-on-erin' } });
    expect((marked.metrics as { trainedOnErasedData?: boolean }).trainedOnErasedData).toBe(true);

    // Back in the server where they were banned: still banned, though their id is no longer stored. /task start
    // refuses at once (bot/session/admission.ts), without asking for consent, so nothing is recorded of them.
    const again = h.fake.command(erin, 'task', 'start', { kind: 'backend' });
    const refused = await h.reply(again, (s) => s.kind === 'original' && s.content !== '', 'the ban');
    expect(refused.content).toMatch(/not allowed/);
    expect(refused.content).not.toContain(h.consentText);
    expect(refused.components).toHaveLength(0);
    expect(await h.tdb.prisma.participant.count({ where: { discordUserId: erin.id } })).toBe(0);
  });

  it('/privacy withdraw withdraws consent and keeps the sessions, which no export includes any more', async () => {
    const gil = h.fake.user('gil');
    const { threadId } = await h.startSession(gil, 'backend');
    await h.agentMessage(threadId, 1);
    const w = h.fake.command(gil, 'privacy', 'withdraw');
    const r = await h.reply(w, (s) => s.kind === 'original' && s.content !== '', 'the withdrawal');
    expect(r.content).toMatch(/consent is withdrawn/);
    const p = await h.tdb.prisma.participant.findUniqueOrThrow({ where: { discordUserId: gil.id } });
    expect(p.consentGivenAt).toBeNull();
    expect(p.consentWithdrawnAt).not.toBeNull();
    expect(await h.tdb.prisma.session.count({ where: { participantId: p.id } })).toBe(1);
    expect(await h.tdb.prisma.auditLog.count({ where: { action: 'consent.withdraw', actor: gil.id } })).toBe(1);
  });

  it("rewrites Snappy Parquet, hf and JSON Lines exports without the person's rows; the version trained on them deploys only by an operator's force, audited", async () => {
    const ana = h.fake.user('ana_export_4411');
    const ben = h.fake.user('ben');
    const anaSays = ['Zoë said "négative" amounts count as zero, ana-42.', "Inputs are never empty — ana's promise."];
    const benSays = ['Ben keeps his words in the export.', 'Ben says the café is open.'];
    const play = async (who: typeof ana, lines: string[]) => {
      const { threadId } = await h.startSession(who, 'backend');
      await h.agentMessage(threadId, 1);
      h.fake.say(who, threadId, lines[0]!);
      await h.agentMessage(threadId, 2);
      h.fake.say(who, threadId, lines[1]!);
      await h.fake.waitFor(
        () => h.fake.inChannel(threadId).find((s) => s.content.includes('How helpful')),
        60_000,
        'rating',
      );
      return h.tdb.prisma.session.findUniqueOrThrow({ where: { threadId } });
    };
    const anaSession = await play(ana, anaSays);
    await play(ben, benSays);
    const run = await h.tdb.prisma.trainingRun.create({
      data: { algorithm: 'sweet', config: {}, dataSnapshot: { sessions: [{ id: anaSession.id, reward: 1 }] } },
    });
    await h.tdb.prisma.policyVersion.create({
      data: { name: 'trained-on-ana', algorithm: 'sweet', checkpointPath: '/nonexistent', trainingRunId: run.id },
    });

    // Real exports of both sessions, in every rewritable format.
    const exports = join(dataDir, 'exports');
    mkdirSync(exports, { recursive: true });
    const parquet = join(exports, 'all.parquet');
    const jsonl = join(exports, 'all.jsonl');
    const hfDir = join(exports, 'hf');
    await exportSessions(h.tdb.prisma, { format: 'parquet', salt }, parquet);
    await exportSessions(h.tdb.prisma, { format: 'jsonl', salt }, jsonl);
    await exportSessions(h.tdb.prisma, { format: 'hf', salt }, hfDir);
    const ab = (b: Buffer) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
    const before = readFileSync(parquet);
    const metaBefore = parquetMetadata(ab(before));
    expect(metaBefore.row_groups[0]!.columns.every((c) => c.meta_data!.codec === 'SNAPPY')).toBe(true);
    expect(Number(metaBefore.num_rows)).toBe(2);
    expect(decompressedImage(before).includes(Buffer.from(anaSays[0]!))).toBe(true);
    // JSON Lines as Python's json.dumps writes it (ensure_ascii): é and — become \u escapes, quotes \".
    const escaped = join(exports, 'ascii.jsonl');
    const asciiLines = readFileSync(jsonl, 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
    writeFileSync(escaped, asciiLines.join('\n') + '\n');
    expect(readFileSync(escaped, 'utf8').includes(anaSays[0]!)).toBe(false); // a byte scan would miss it
    const broken = join(exports, 'broken.jsonl');
    const brokenText = `{"text": "${anaSays[1]}"\n`;
    writeFileSync(broken, brokenText);

    const receipt = await h.reply(
      h.fake.command(ana, 'privacy', 'delete'),
      (s) => s.kind === 'original' && s.content.includes('Deleted:'),
      'the receipt',
    );
    expect(receipt.content).toContain('trained-on-ana');
    expect(receipt.content).toMatch(/could NOT be fully cleaned.*broken\.jsonl: line 1 is not JSON/s);
    expect(readFileSync(broken, 'utf8')).toBe(brokenText); // left as it was, and reported

    // Parquet: read back with hyparquet and as decompressed bytes: none of her text, all of Ben's, same schema.
    const after = readFileSync(parquet);
    const metaAfter = parquetMetadata(ab(after));
    expect(metaAfter.schema).toEqual(metaBefore.schema);
    expect(metaAfter.key_value_metadata).toEqual(metaBefore.key_value_metadata);
    const rows = await parquetReadObjects({ file: ab(after) });
    expect(rows).toHaveLength(1);
    expect((rows[0]!.turns as { content: string }[]).map((t) => t.content)).toEqual(expect.arrayContaining(benSays));
    const image = decompressedImage(after);
    for (const n of [...anaSays, ana.id, ana.username])
      expect(image.includes(Buffer.from(n)), `parquet holds ${n}`).toBe(false);
    for (const n of benSays) expect(image.includes(Buffer.from(n))).toBe(true);
    // hf: the split's file rewritten the same way, and the card's row count follows.
    const hfFiles = filesUnder(join(hfDir, 'data'));
    expect(hfFiles).toHaveLength(1);
    const hfRows = await parquetReadObjects({ file: ab(readFileSync(hfFiles[0]!)) });
    expect(hfRows).toHaveLength(1);
    expect(decompressedImage(readFileSync(hfFiles[0]!)).includes(Buffer.from(anaSays[0]!))).toBe(false);
    expect(readFileSync(join(hfDir, 'README.md'), 'utf8')).toMatch(/num_examples: 1\n/);
    // JSON Lines, plain and escaped: her line gone, Ben's kept byte for byte.
    const jl = readFileSync(jsonl, 'utf8').trim().split('\n');
    expect(jl).toHaveLength(1);
    expect(JSON.parse(jl[0]!).turns.map((t: { content: string }) => t.content)).toEqual(
      expect.arrayContaining(benSays),
    );
    const benAscii = asciiLines.find((l) =>
      JSON.parse(l).turns.some((t: { content: string }) => t.content === benSays[0]),
    );
    expect(readFileSync(escaped, 'utf8')).toBe(`${benAscii}\n`);

    // The version trained on her sessions: marked in /mod stats, refused without force, refused to a
    // non-operator, deployed by an operator's force with an audit entry.
    const stats = await h.reply(
      h.fake.command(boss, 'mod', 'stats', {}, { moderator: true }),
      (s) => s.kind === 'original' && s.content.includes('Participants'),
      '/mod stats',
    );
    expect(stats.content).toContain(
      "Trained on erased data (deploy only with an operator's force): trained-on-erin, trained-on-ana",
    );
    const plain = await h.reply(
      h.fake.command(boss, 'mod', 'deploy', { version: 'trained-on-ana' }, { moderator: true }),
      (s) => s.kind === 'original' && s.content !== '',
      'the refusal',
    );
    expect(plain.content).toMatch(
      /trained on sessions of a person whose data has since been deleted.*needs an operator's explicit force/,
    );
    const guildMod = await h.reply(
      h.fake.command(
        h.fake.user('guild-mod'),
        'mod',
        'deploy',
        { version: 'trained-on-ana', force: true },
        { moderator: true },
      ),
      (s) => /operator/i.test(s.content),
      'the operators-only refusal',
    );
    expect(guildMod.content).toMatch(/operators only/i);
    expect((await h.tdb.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'trained-on-ana' } })).status).toBe(
      'candidate',
    );
    expect(await h.tdb.prisma.auditLog.count({ where: { action: 'policy.force-erased-data' } })).toBe(0);
    const forced = await h.reply(
      h.fake.command(boss, 'mod', 'deploy', { version: 'trained-on-ana', force: true }, { moderator: true }),
      (s) => s.kind === 'original' && s.content !== '',
      'the deploy',
    );
    expect(forced.content).toContain('Deployed trained-on-ana');
    const audit = await h.tdb.prisma.auditLog.findMany({ where: { action: 'policy.force-erased-data' } });
    expect(audit.map((a) => [a.actor, a.target, (a.detail as { via: string }).via])).toEqual([
      [boss.id, 'trained-on-ana', 'policy.deploy'],
    ]);
  });
});
