// /mod export takes the command line's formats and filters, and an export too large for a message is written on
// the server and the moderator told where, instead of failing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { builtinTasks } from '../../../tasks/library.ts';
import type { BackendTask, TaskRecord } from '../../../tasks/model.ts';
import { appendAgentTurn, appendHumanTurn, createSession } from '../../../prisma/session-store.ts';
import { recordEvaluation } from '../../../prisma/evaluation-store.ts';
import { recordRating } from '../../../prisma/rating-store.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

const task = builtinTasks({ kind: 'backend' })[0] as TaskRecord & BackendTask;
const exportDir = mkdtempSync(join(tmpdir(), 'sweetloop-mod-export-'));

describe('/mod export', () => {
  const h = new BotHarness({
    tasks: [task],
    agent: scriptedAgent('scripted', () => 'unused'),
    // Small enough that a two-session sweet-rl file and its card (~19 kB) do not fit, while an empty export does.
    botOptions: () => ({ maxExportBytes: 9000, exportDir, exportSalt: 'mod-export-test-salt' }),
  });

  beforeAll(async () => {
    await h.start();
    // Two answered, evaluated sessions of people in this guild, written as the engine writes them.
    const stored = await h.tdb.prisma.task.findFirstOrThrow();
    for (const who of ['p1', 'p2']) {
      const p = await h.tdb.prisma.participant.create({
        data: { discordUserId: `9${who.length}000000000000000${who.at(-1)}`, consentGivenAt: new Date() },
      });
      const s = await createSession(h.tdb.prisma, {
        taskId: stored.id,
        participantId: p.id,
        policyVersionId: null,
        channel: 'discord',
        simulated: false,
        guildId: h.fake.guildId,
      });
      await appendAgentTurn(h.tdb.prisma, s.id, {
        content: 'Which rounding do you want?',
        rawOutput: 'Which rounding do you want?',
      });
      await appendHumanTurn(h.tdb.prisma, s.id, { content: 'Round half up, please.' });
      const answer = `I WANT TO ANSWER:\n${task.reference}`;
      await appendAgentTurn(
        h.tdb.prisma,
        s.id,
        { content: answer, rawOutput: answer },
        { answer: task.reference, endReason: 'answered' },
      );
      await recordEvaluation(
        h.tdb.prisma,
        s.id,
        { score: 1, success: true, testsPassed: 10, testsTotal: 10, detail: {}, evaluatorVersion: 'test' },
        0,
      );
      // Only p1 rates, so `min_rating: 5` selects one session: an export small enough to come attached.
      if (who === 'p1') await recordRating(h.tdb.prisma, s.id, p.id, 5, 0);
    }
  });
  afterAll(async () => {
    await h.stop();
  });

  it('writes an export over the message limit on the server and says where; a small one comes attached; an empty one is refused with why', async () => {
    const mod = h.fake.user('mod');
    const big = h.fake.command(mod, 'mod', 'export', { format: 'sweet-rl', kind: 'backend' }, { moderator: true });
    const told = await h.reply(big, (s) => /written on the server/.test(s.content ?? ''), 'server path');
    const path = /`([^`]+\.sweet-rl\.jsonl)`/.exec(told.content!)![1]!;
    expect(path.startsWith(exportDir)).toBe(true);
    const lines = readFileSync(path, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(2);
    expect(lines[0].dialogue_history.at(-1).role).toBe('assistant');
    expect(existsSync(`${path}.README.md`)).toBe(true);

    // The same filters as the command line: rated at least 5 selects p1's session only, small enough to attach.
    const small = h.fake.command(mod, 'mod', 'export', { format: 'jsonl', min_rating: 5 }, { moderator: true });
    const attached = await h.reply(small, (s) => s.files.length > 0, 'attachment');
    expect(attached.content).toContain('1 session(s)');

    // Rated at least 5 and frontend selects nothing, which is refused with the filter that left nothing
    // (bot/export/query.ts describeSteps), and nothing is written or logged as exported.
    const empty = h.fake.command(
      mod,
      'mod',
      'export',
      { format: 'jsonl', kind: 'frontend', min_rating: 5 },
      { moderator: true },
    );
    const said = await h.reply(empty, (s) => /nothing to export/.test(s.content ?? ''), 'empty refusal');
    expect(said.content).toMatch(/frontend|rated at least 5/);
    expect(said.files).toHaveLength(0);
    const audit = await h.tdb.prisma.auditLog.findMany({ where: { action: 'data.export' } });
    expect(audit.map((a) => (a.detail as { delivery: string }).delivery).sort()).toEqual(['attachment', 'server']);

    // A bad filter is refused with the reason.
    const bad = h.fake.command(mod, 'mod', 'export', { format: 'jsonl', since: 'yesterday' }, { moderator: true });
    const refused = await h.reply(bad, (s) => /since/.test(s.content ?? ''), 'refusal');
    expect(refused.content).toMatch(/expected a date/);
  });
});
