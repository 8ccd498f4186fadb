// The fake Discord (fake-discord.ts) as a process of its own, for `bin/compose-check.sh --fake-discord`: the bot in
// its container connects to it by service name instead of to discord.com, so a deployment can be checked end to end
// on a host without Discord (or without touching a bot token another deployment uses). Settings from the
// environment: FAKE_DISCORD_PORT (9999), FAKE_DISCORD_HOST (0.0.0.0), FAKE_DISCORD_PUBLIC_HOST (the name the bot
// reaches it by; default the host name), FAKE_DISCORD_TOKEN (when set, other tokens get 401, as from Discord).
// Run: node --import tsx testing/fake-discord-serve.ts. Stops on SIGTERM or SIGINT.
import { hostname } from 'node:os';
import { FakeDiscord } from './fake-discord.ts';

const port = Number(process.env.FAKE_DISCORD_PORT ?? 9999);
const fake = await new FakeDiscord({
  ...(process.env.FAKE_DISCORD_TOKEN ? { token: process.env.FAKE_DISCORD_TOKEN } : {}),
  listen: {
    host: process.env.FAKE_DISCORD_HOST ?? '0.0.0.0',
    port,
    publicHost: process.env.FAKE_DISCORD_PUBLIC_HOST ?? hostname(),
  },
}).start();
console.log(`fake Discord at ${fake.apiBase} (guild ${fake.guildId})`);

const stop = () => void fake.stop().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
