// A frontend session end to end: the target screenshot shown privately, the agent's draft rendered by the real
// Chromium renderer and posted as an image, the answer scored by the frontend evaluator.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import type { FrontendTask, TaskRecord } from '../../../tasks/model.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

const task = builtinTasks({ kind: 'frontend' })[0] as TaskRecord & FrontendTask;
const DRAFT =
  '<!DOCTYPE html><html><body style="background:#123456"><h1 style="color:white">First idea</h1></body></html>';
const agent = scriptedAgent('scripted', (dialogue) => {
  const mine = dialogue.filter((m) => m.role === 'assistant').length;
  return mine === 0
    ? `Here is a first draft; how does it differ from what you want?\nOUTPUT:\n${DRAFT}`
    : `I WANT TO ANSWER:\n${task.reference}`;
});
const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47]);

describe('Discord bot, frontend session', () => {
  const h = new BotHarness({ tasks: [task], agent, render: 'chromium' });
  beforeAll(async () => {
    await h.start();
  });
  afterAll(async () => {
    await h.stop();
  });

  it('shows the target privately, posts the draft as an image, scores the answer', async () => {
    const alice = h.fake.user('alice');
    const { threadId, hidden } = await h.startSession(alice, 'frontend');
    const target = hidden.flatMap((s) => s.files).find((f) => f.name === 'target.png');
    expect(target?.data.subarray(0, 4).equals(PNG_MAGIC)).toBe(true);
    expect(hidden.every((s) => s.flags & 64 || s.kind === 'original')).toBe(true); // private (ephemeral) replies
    expect(hidden.map((s) => s.content).join('\n')).not.toContain('<html'); // the page's code is never shown

    const draft = await h.agentMessage(threadId, 1);
    expect(draft.content).toContain('how does it differ');
    expect(draft.content).not.toContain('<body');
    const draftPng = draft.files.find((f) => f.name === 'draft-1.png');
    expect(draftPng?.data.subarray(0, 4).equals(PNG_MAGIC)).toBe(true);

    h.fake.say(alice, threadId, 'Mine is much lighter, with pictures.');
    const answer = await h.agentMessage(threadId, 2);
    expect(
      answer.files
        .find((f) => f.name === 'answer.png')
        ?.data.subarray(0, 4)
        .equals(PNG_MAGIC),
    ).toBe(true);
    const result = await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content.startsWith('**Result:**')),
      60_000,
      'result',
    );
    expect(result.content).toContain('similarity to your page');
    const p = await h.tdb.prisma.participant.findUniqueOrThrow({ where: { discordUserId: alice.id } });
    const s = await h.tdb.prisma.session.findFirstOrThrow({
      where: { participantId: p.id },
      include: { evaluation: true, turns: true },
    });
    expect(s.evaluation!.score).toBeGreaterThan(0.99); // the reference page against itself
    expect(s.evaluation!.metric).toBeTruthy();
    expect(s.turns.find((t) => t.index === 0)!.content).toContain(DRAFT); // the dialogue keeps the HTML
  });
});
