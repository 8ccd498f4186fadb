// The bot process of bench/crash.ts: the real runtime (bot/runtime.ts) and Discord client (bot/discord/bot.ts)
// over the soak's Postgres database and fake Discord, as `sweetloop bot` runs them, killed with SIGKILL at will.
// Its log goes to stdout as JSON lines (pino, debug level), which the driver reads to time its kills.
// Settings come from the environment:
//   CRASH_DB_URL, CRASH_API_BASE, CRASH_GUILD_ID  where the database and Discord are;
//   CRASH_AGENT         'scripted': CRASH_QUESTIONS questions, then the task's reference as the answer, each after
//                       CRASH_AGENT_MS; 'checkpoint': the deployed checkpoint version through the bot's own local
//                       server (trainer/serve/local.ts), loaded on first use as in production;
//   CRASH_MAX_TURNS     agent messages per session;
//   CRASH_SCORE_MS      how long scoring takes before the real sandboxed evaluator runs (the driver kills in it).
import pino from 'pino';
import type { Agent, ChatMessage } from '../tasks/agent.ts';
import { builtinTasks } from '../tasks/library.ts';
import { createScorer } from '../tasks/scorer.ts';
import { openDatabase } from '../prisma/db.ts';
import { createRuntime } from '../bot/runtime.ts';
import { DiscordBot } from '../bot/discord/bot.ts';
import { READY_LINE, SCORING_LINE } from './crash-process.ts';

const env = process.env;
const need = (k: string): string =>
  env[k] ??
  (() => {
    throw new Error(`crash-bot: ${k} is not set`);
  })();
const log = pino({ level: 'debug', base: null }, pino.destination({ dest: 1, sync: true }));
const questions = Number(env.CRASH_QUESTIONS ?? 2);
const agentMs = Number(env.CRASH_AGENT_MS ?? 200);
const scoreMs = Number(env.CRASH_SCORE_MS ?? 1500);
const references = new Map(builtinTasks().map((t) => [t.description, t.reference]));

/** A few questions, then the reference as the answer, so that every session can finish with a full score. */
function scriptedAgent(): Agent {
  return {
    name: 'crash-scripted',
    async reply(dialogue: ChatMessage[]) {
      await new Promise((r) => setTimeout(r, agentMs));
      const mine = dialogue.filter((m) => m.role === 'assistant').length;
      if (mine < questions) return { text: `Question ${mine + 1}: what should happen with input number ${mine + 1}?` };
      const reference = references.get(dialogue.find((m) => m.role === 'user')?.content ?? '');
      if (!reference) throw new Error('crash-bot: a task that is not built in');
      return { text: `I WANT TO ANSWER:\n${reference}` };
    },
  };
}

const db = await openDatabase({ databaseUrl: need('CRASH_DB_URL'), pgliteDir: '/nonexistent' });
const scorer = createScorer({ renderer: null });
const rt = await createRuntime({
  channel: 'discord',
  db,
  log,
  maxTurns: Number(env.CRASH_MAX_TURNS ?? 10),
  idleMinutes: 30,
  render: null,
  policyPollMs: 1_000,
  evaluate: async (task, answer) => {
    log.info({ answerChars: answer.length }, SCORING_LINE);
    await new Promise((r) => setTimeout(r, scoreMs));
    return scorer.evaluate(task, answer);
  },
  ...(env.CRASH_AGENT === 'checkpoint'
    ? { localServe: { engine: 'tfjs', maxBatch: 8, maxQueue: 32 } }
    : { loadAgent: async () => scriptedAgent() }),
});
const bot = new DiscordBot(
  rt.engine,
  rt.services,
  {
    token: 'crash-bot-token',
    apiBase: need('CRASH_API_BASE'),
    guildIds: [need('CRASH_GUILD_ID')],
    consentText: 'CRASH SOAK CONSENT',
    exportSalt: 'crash-salt',
    expiryCheckMs: 5_000,
  },
  log,
);
await bot.start();
log.info(READY_LINE);
