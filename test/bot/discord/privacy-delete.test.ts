// Deletion that deletes: after /privacy delete, neither a pg_dump of the whole database nor any file under the
// data directory holds the person's Discord id, their username or any sentence they wrote; their thread is gone
// from Discord; policy versions trained on their sessions are marked; a ban still holds when they come back.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import type { BackendTask, TaskRecord } from '../../../tasks/model.ts';
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
  const h = new BotHarness({ tasks: [task], agent, privacy: { key: 'test-privacy-key-0123456789', dirs: [dataDir] } });
  beforeAll(async () => {
    await h.start();
  });
  afterAll(async () => {
    await h.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('leaves no trace of the person in the database, the data directory or Discord', async () => {
    const erin = h.fake.user('zq_erin_7731');
    const other = h.fake.user('frank');
    const sentences = ['Negative amounts should count as zero, said the walrus.', 'Inputs are never empty, pinky promise.'];
    const { threadId } = await h.startSession(erin, 'backend');
    await h.agentMessage(threadId, 1);
    h.fake.say(erin, threadId, sentences[0]!);
    await h.agentMessage(threadId, 2);
    h.fake.say(erin, threadId, sentences[1]!);
    const rating = await h.fake.waitFor(() => h.fake.inChannel(threadId).find((s) => s.content.startsWith('How helpful')), 60_000, 'rating');
    await h.reply(h.fake.click(erin, rating, `rate:${(await h.tdb.prisma.session.findUniqueOrThrow({ where: { threadId } })).id}:4`), (s) => s.kind === 'original' || s.kind === 'edit');
    const otherRun = await h.startSession(other, 'backend');
    await h.agentMessage(otherRun.threadId, 1);
    h.fake.say(other, otherRun.threadId, 'Frank keeps his words.');
    await h.agentMessage(otherRun.threadId, 2);

    // Files a trainer leaves: a run's data snapshot and a pair cache holding both people's text.
    const session = await h.tdb.prisma.session.findUniqueOrThrow({ where: { threadId } });
    const run = await h.tdb.prisma.trainingRun.create({ data: { algorithm: 'sweet', config: {}, dataSnapshot: { sessions: [{ id: session.id, reward: 1 }] } } });
    await h.tdb.prisma.policyVersion.create({ data: { name: 'trained-on-erin', algorithm: 'sweet', trainingRunId: run.id } });
    mkdirSync(join(dataDir, 'checkpoints', 'run-1'), { recursive: true });
    writeFileSync(join(dataDir, 'checkpoints', 'run-1', 'snapshot.json'), JSON.stringify({ turns: [sentences[0], 'agent text'] }));
    writeFileSync(join(dataDir, 'checkpoints', 'pairs.jsonl'), [JSON.stringify({ chosen: sentences[1] }), JSON.stringify({ chosen: 'Frank keeps his words.' })].join('\n') + '\n');
    writeFileSync(join(dataDir, 'unrelated.txt'), 'nothing personal');

    // A ban that must survive the deletion.
    const op = h.fake.user('op');
    await h.reply(h.fake.command(op, 'mod', 'ban', { user: erin, reason: 'testing', everywhere: false }, { moderator: true }), (s) => s.kind === 'original');

    const del = h.fake.command(erin, 'privacy', 'delete');
    const receipt = await h.reply(del, (s) => s.kind === 'original' && s.content.includes('Deleted:'), 'the receipt');
    expect(receipt.content).toMatch(/Threads removed from Discord: 1\./);
    expect(receipt.content).toMatch(/Files cleaned: 2 \(1 deleted, 1 rewritten\)/);
    expect(receipt.content).toContain('trained-on-erin');

    const dump = execFileSync('pg_dump', ['--no-owner', h.tdb.url], { maxBuffer: 256 * 1024 * 1024 }).toString('utf8');
    expect(dump).toContain('Frank keeps his words.'); // the dump does hold the data of others
    for (const needle of [erin.id, erin.username, ...sentences]) {
      expect(dump.includes(needle), `pg_dump holds ${needle}`).toBe(false);
      for (const f of filesUnder(dataDir)) expect(readFileSync(f, 'utf8').includes(needle), `${f} holds ${needle}`).toBe(false);
    }
    expect(readFileSync(join(dataDir, 'checkpoints', 'pairs.jsonl'), 'utf8')).toContain('Frank keeps his words.');
    expect(readFileSync(join(dataDir, 'unrelated.txt'), 'utf8')).toBe('nothing personal');
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
});
