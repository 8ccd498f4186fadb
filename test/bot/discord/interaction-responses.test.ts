// Interaction responses (the callback, and the interaction's webhook: edits of the reply, follow-ups) are not
// counted against the bot token's 50 requests a second by Discord, so the bot sends them through a REST manager of
// its own, outside discord.js's count (bot/discord/bot.ts); everything else goes through the client's, under it.
// Real discord.js client against the fake Discord, real Postgres.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { REST } from 'discord.js';
import { builtinTasks } from '../../../tasks/library.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

const agent = scriptedAgent('scripted', async () => 'Which inputs matter most to you?');

describe('Discord bot REST: interaction responses outside the global count', () => {
  const h = new BotHarness({ tasks: builtinTasks({ kind: 'backend' }).slice(0, 1), agent });
  beforeAll(async () => {
    await h.start();
  });
  afterAll(async () => {
    await h.stop();
  });

  it('sends the reply, its edits and follow-ups through its own manager, and the posts in a thread through the counted one', async () => {
    const routes = (rest: REST) => {
      const seen: string[] = [];
      rest.on('response', (r) => void seen.push(`${r.method.toUpperCase()} ${r.path}`));
      return seen;
    };
    const exempt = routes(h.bot.interactionRest);
    const counted = routes(h.bot.client.rest);
    const { threadId } = await h.startSession(h.fake.user('dana'), 'backend');
    await h.agentMessage(threadId, 1);

    const isInteraction = (r: string) =>
      / \/interactions\/\d+\/[^/]+\/callback/.test(r) || r.includes(` /webhooks/${h.fake.appId}/`);
    expect(exempt.some((r) => r.includes('/callback'))).toBe(true);
    expect(exempt.some((r) => r.startsWith('PATCH ') && r.endsWith('/messages/%40original'))).toBe(true);
    expect(exempt.every(isInteraction)).toBe(true);
    expect(counted.some((r) => r === `POST /channels/${threadId}/messages`)).toBe(true);
    expect(counted.filter(isInteraction)).toEqual([]);
  });
});
