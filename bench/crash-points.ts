// The kill points of the crash soak, and how the driver knows one has come: from the database (a person's
// message stored), from the fake Discord (a post carried out but its response held back, so the bot never learns
// it got out), or from the bot's own log (scoring started, catch-up started, the local server up and loading).
import type { FakeDiscord } from '../testing/fake-discord.ts';
import type { PrismaClient } from '../prisma/generated/client.ts';
import type { Rng } from '../tasks/random.ts';
import {
  CATCH_UP_LINE,
  GATEWAY_LINE,
  LOCAL_LISTENING_LINE,
  LOCAL_LOADED_LINE,
  SCORING_LINE,
  type BotProcess,
} from './crash-process.ts';

export const POINTS = {
  stored: "(a) a person's message stored",
  'agent-post': '(b) an agent message posting',
  'result-post': '(c) the result posting',
  scoring: '(d) during scoring',
  'local-load': '(e) while the local server loads',
  'catch-up': '(f) during catch-up',
  random: 'at a random moment',
} as const;
export type Point = keyof typeof POINTS;

/** The order of kills: shuffled rounds of `points`, so every point comes up as often, in a seeded order. */
export function killPlan(points: Point[], kills: number, rng: Rng): Point[] {
  const plan: Point[] = [];
  while (plan.length < kills) plan.push(...rng.shuffle([...points]));
  return plan.slice(0, kills);
}

export interface CueContext {
  bot: BotProcess;
  fake: FakeDiscord;
  prisma: PrismaClient;
  rng: Rng;
}

const THREAD_POST = /^\/channels\/\d+\/messages$/;
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done);
  });

/**
 * Resolves when the bot has reached `point` (true), or after `timeoutMs` without it (false: the driver kills at
 * that moment instead, and says so). The bot process must be killed at once on return: a held post hangs it.
 */
export async function cue(point: Point, c: CueContext, timeoutMs: number): Promise<boolean> {
  const stop = new AbortController();
  const timeout = sleep(timeoutMs, stop.signal).then(() => false);
  const lineCue = (msg: string) => c.bot.waitLine((l) => l.msg === msg, stop.signal).then((l) => l !== null);
  const reached = async (): Promise<boolean> => {
    switch (point) {
      case 'random': {
        // Within the first seconds of serving (a kill during start-up is what (e) and (f) are for).
        const wait = c.rng.next() * 8000;
        if (!(await lineCue(GATEWAY_LINE))) return false;
        await sleep(wait, stop.signal);
        return !stop.signal.aborted;
      }
      case 'stored': {
        const before = await c.prisma.turn.count({ where: { role: 'human' } });
        while (!stop.signal.aborted && c.bot.alive) {
          if ((await c.prisma.turn.count({ where: { role: 'human' } })) > before) return true;
          await sleep(15, stop.signal);
        }
        return false;
      }
      case 'agent-post':
      case 'result-post': {
        const prefix = point === 'agent-post' ? '**Agent**' : '**Result:**';
        const held = c.fake.holdResponse(
          'POST',
          THREAD_POST,
          (b) => typeof b?.content === 'string' && b.content.startsWith(prefix),
          stop.signal,
        );
        return Promise.race([held.then(() => true), c.bot.exited.then(() => false)]);
      }
      case 'scoring':
        return lineCue(SCORING_LINE);
      case 'catch-up':
        return lineCue(CATCH_UP_LINE);
      case 'local-load': {
        // The server listens, then loads the deployed checkpoint: kill somewhere in that load.
        if (!(await lineCue(LOCAL_LISTENING_LINE))) return false;
        await sleep(c.rng.next() * 300, stop.signal);
        return !c.bot.epoch.lines.some((l) => l.msg === LOCAL_LOADED_LINE);
      }
    }
  };
  try {
    return await Promise.race([reached(), timeout, c.bot.exited.then(() => false)]);
  } finally {
    stop.abort();
  }
}
