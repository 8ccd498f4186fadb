// The scoring notice in a session's thread (bot/discord/thread-view.ts): an answer that waited for the scoring pool
// has its notice edited to "Scoring your answer…" only when its scoring takes longer than SCORING_EDIT_AFTER_MS; a
// quicker result follows the waiting notice with no edit (one Discord request less). The result and the rating
// prompt come in one post. Real discord.js client against the fake Discord, real Postgres.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import type { BackendTask, TaskRecord } from '../../../tasks/model.ts';
import type { EvaluationOutcome } from '../../../tasks/scorer.ts';
import { SCORING_EDIT_AFTER_MS } from '../../../bot/discord/thread-view.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

const task = builtinTasks({ kind: 'backend' })[1] as TaskRecord & BackendTask;
const agent = scriptedAgent('scripted', (dialogue) => {
  const person = /^I am (\w+)\./.exec(dialogue.at(-1)!.content)?.[1];
  return person ? `I WANT TO ANSWER:\n# ${person}\n${task.reference}` : 'Who are you?';
});
/** How long each person's answer takes to score: the first two longer than the notice's delay, the third at once. */
const scoringMs: Record<string, number> = {
  first: SCORING_EDIT_AFTER_MS + 1_000,
  slow: SCORING_EDIT_AFTER_MS + 1_000,
  quick: 0,
};

describe('the scoring notice', () => {
  const h: BotHarness = new BotHarness({
    tasks: [task],
    agent,
    evaluate: async (_t, answer): Promise<EvaluationOutcome> => {
      await new Promise((r) => setTimeout(r, scoringMs[/# (\w+)/.exec(answer)![1]!]));
      return { score: 1, success: true, testsPassed: 1, testsTotal: 1, detail: null, evaluatorVersion: 'test-fixed' };
    },
    scoringPool: 1,
  });
  beforeAll(async () => {
    await h.start();
  });
  afterAll(async () => {
    await h.stop();
  });

  it('is edited for an answer scored slowly after waiting, not for one scored at once', async () => {
    const threads: Record<string, string> = {};
    const users = Object.fromEntries(['first', 'slow', 'quick'].map((name) => [name, h.fake.user(name)]));
    for (const name of ['first', 'slow', 'quick']) {
      const { threadId } = await h.startSession(users[name]!, 'backend');
      await h.agentMessage(threadId, 1);
      threads[name] = threadId;
    }
    const notice = (name: string, re: RegExp) =>
      h.fake.waitFor(
        () => h.fake.inChannel(threads[name]!).find((s) => re.test(s.content)),
        30_000,
        `${name}'s notice`,
      );
    // One after another, so that "slow" and "quick" wait behind "first" in the pool of one.
    for (const name of ['first', 'slow', 'quick']) {
      h.fake.say(users[name]!, threads[name]!, `I am ${name}. Zero for short stays.`);
      await notice(name, name === 'first' ? /Scoring your answer/ : /waits to be scored/);
    }
    for (const name of ['first', 'slow', 'quick']) {
      await h.fake.waitFor(
        () => h.fake.inChannel(threads[name]!).find((s) => s.content.startsWith('**Result:**')),
        30_000,
        `${name}'s result`,
      );
    }
    const edits = (name: string) =>
      h.fake.requests.filter((r) => r.method === 'PATCH' && r.path.startsWith(`/channels/${threads[name]}/messages/`));
    expect(edits('first')).toHaveLength(0);
    expect(edits('slow').map((r) => r.body?.content)).toEqual(['*Scoring your answer…*']);
    expect(edits('quick')).toHaveLength(0);
    // The result carries the rating prompt and its buttons: one post for both.
    for (const name of ['first', 'slow', 'quick']) {
      const result = h.fake.inChannel(threads[name]!).filter((s) => s.content.startsWith('**Result:**'));
      expect(result).toHaveLength(1);
      expect(result[0]!.content).toContain('How helpful was the agent?');
      expect(JSON.stringify(result[0]!.components)).toMatch(/"rate:[0-9a-f-]+:5"/);
    }
  });
});
