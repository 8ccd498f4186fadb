// End to end over the fake Discord: a person is shown two finished sessions of the same task with /compare,
// picks the agent that helped more with a button; the preference is stored, becomes a Bradley-Terry pair
// (chosen = the session picked) and is exported with the rater pseudonymised.
import { MessageFlags } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { builtinTasks } from '../../../tasks/library.ts';
import { storeFinishedSession } from '../../../prisma/finished-session-store.ts';
import { peoplePairs } from '../../../prisma/preference-store.ts';
import { exportPreferences } from '../../../bot/export/preferences.ts';
import { DEV_PRIVACY_KEY, deletePerson } from '../../../bot/privacy.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

const tasks = builtinTasks({ kind: 'backend' }).slice(0, 2);
const h = new BotHarness({ tasks, agent: scriptedAgent('unused', () => 'I WANT TO ANSWER: def f(): pass') });
const sessions: string[] = [];

beforeAll(async () => {
  await h.start();
  const other = await h.tdb.prisma.policyVersion.create({
    data: { name: 'other', algorithm: 'external', checkpointPath: '/nonexistent', status: 'candidate' },
  });
  const task = await h.tdb.prisma.task.findFirstOrThrow({ where: { description: tasks[0]!.description } });
  for (const [k, policy] of [h.policy.id, other.id].entries()) {
    sessions.push(
      await storeFinishedSession(h.tdb.prisma, {
        taskId: task.id,
        policyVersionId: policy,
        collaborator: 'rule-simulator',
        channel: 'simulated',
        turns: [
          { role: 'agent', content: k === 0 ? 'Which rounding do you want?' : 'What are the rates?' },
          { role: 'human', content: 'Round to cents; the rates are in my notes.' },
          { role: 'agent', content: `I WANT TO ANSWER: def f(): return ${k}` },
        ],
        answer: `def f(): return ${k}`,
        endReason: 'answered',
        evaluation: { score: k / 2, success: false, detail: {}, evaluatorVersion: 'test' } as never,
        startedAt: new Date(),
        endedAt: new Date(),
      }),
    );
  }
}, 120_000);
afterAll(async () => {
  await h.stop();
});

describe('/compare', () => {
  it('asks for consent first', async () => {
    const i = h.fake.command(h.fake.user('stranger'), 'compare', null);
    expect((await h.reply(i, (s) => s.content.length > 0)).content).toContain('accept the data-collection notice');
    expect(await h.tdb.prisma.preference.count()).toBe(0);
  });

  it('stores the choice, gives a Bradley-Terry pair and exports it pseudonymised', async () => {
    const dana = h.fake.user('dana');
    await h.tdb.prisma.participant.create({
      data: { discordUserId: dana.id, displayName: 'dana', consentGivenAt: new Date() },
    });
    const i = h.fake.command(dana, 'compare', null);
    const buttons = await h.reply(i, (s) => s.components.length > 0, 'the buttons');
    const shown = h.fake
      .replies(i)
      .map((s) => s.content)
      .join('\n');
    expect(shown).toContain('Which agent helped more?');
    expect(shown).toContain(tasks[0]!.description.slice(0, 40));
    expect(shown).toContain('__**Session A**__');
    expect(shown).toContain('__**Session B**__');
    expect(shown).toContain('Which rounding do you want?');
    expect(shown).toContain('What are the rates?');
    // The agents' words, shown again: private, and no link in them unfurls.
    const transcripts = h.fake.replies(i).filter((s) => s.content.includes('__**Session'));
    expect(transcripts.length).toBeGreaterThanOrEqual(2);
    for (const t of transcripts) expect(t.flags).toBe(MessageFlags.Ephemeral | MessageFlags.SuppressEmbeds);
    const stored = await h.tdb.prisma.preference.findFirstOrThrow();
    expect(stored.choice).toBeNull();
    expect([stored.sessionAId, stored.sessionBId].sort()).toEqual([...sessions].sort());

    const click = h.fake.click(dana, buttons, `pref:${stored.id}:b`);
    await h.reply(click, (s) => s.content.includes('you chose "Agent B helped more"'), 'thanks');
    const answered = await h.tdb.prisma.preference.findUniqueOrThrow({ where: { id: stored.id } });
    expect(answered.choice).toBe('b');
    expect(await peoplePairs(h.tdb.prisma, sessions)).toEqual([
      { id: stored.id, chosen: stored.sessionBId, rejected: stored.sessionAId, raterId: answered.raterId },
    ]);

    const out = new PassThrough();
    let text = '';
    out.on('data', (c) => (text += c));
    expect(await exportPreferences(h.tdb.prisma, 'test-export-salt', out)).toBe(1);
    const rec = JSON.parse(text.trim());
    expect(rec).toMatchObject({
      comparison_id: stored.id,
      session_a: stored.sessionAId,
      session_b: stored.sessionBId,
      choice: 'b',
    });
    expect(rec.rater).toMatch(/^p_[0-9a-f]+$/);
    expect(text).not.toContain(dana.id);

    // Nothing left to compare for her (the only pair is judged).
    const again = h.fake.command(dana, 'compare', null);
    expect((await h.reply(again, (s) => s.content.length > 0)).content).toContain('nothing to compare');

    // Someone else cannot answer her comparison.
    const eve = h.fake.user('eve');
    await h.tdb.prisma.participant.create({ data: { discordUserId: eve.id, consentGivenAt: new Date() } });
    const forged = h.fake.click(eve, buttons, `pref:${stored.id}:a`);
    await h.reply(forged, (s) => s.content.includes('Only the person who was shown this comparison'), 'refusal');
    expect((await h.tdb.prisma.preference.findUniqueOrThrow({ where: { id: stored.id } })).choice).toBe('b');

    // Deleting her data deletes her preferences.
    await deletePerson(h.tdb.prisma, dana.id, { key: DEV_PRIVACY_KEY });
    expect(await h.tdb.prisma.preference.count()).toBe(0);
  }, 120_000);
});
