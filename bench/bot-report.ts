// bench:bot's arithmetic and its table (bench/bot.ts runs the phases): percentiles of a list, merged time
// intervals and their overlap (the time posts waited on Discord's global limit), and the printed table a phase a
// column.
import { availableParallelism } from 'node:os';
import { percentile } from '../tasks/stats.ts';

export type RestRecord = { method: string; route: string; queuedAt: number; waitMs: number | null };
export type Stat = { n: number; p50: number; p99: number; max: number };
export const stat = (xs: number[]): Stat => ({
  n: xs.length,
  p50: round(percentile(xs, 50)),
  p99: round(percentile(xs, 99)),
  max: round(xs.length ? Math.max(...xs) : NaN),
});
export const round = (x: number, d = 1) => Number(x.toFixed(d));
/** Intervals [from, to] merged where they overlap, in order. */
export function union(xs: [number, number][]): [number, number][] {
  const out: [number, number][] = [];
  for (const [a, b] of [...xs].sort((x, y) => x[0] - y[0])) {
    const last = out.at(-1);
    if (last && a <= last[1]) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}
/** Total length of the overlap of two merged interval lists. */
export function overlap(xs: [number, number][], ys: [number, number][]): number {
  let total = 0;
  for (const [a, b] of xs) for (const [c, d] of ys) if (c < b && d > a) total += Math.min(b, d) - Math.max(a, c);
  return total;
}

/** The table of the phases' figures, a phase a column (the JSON line after it carries them all). */
export function printPhases(
  phases: Record<string, any>[],
  o: { turns: number; maxTokens: number; tokenDelayMs: number; scoringPool: number },
): void {
  const row = (name: string, f: (x: Record<string, any>) => string) =>
    console.log(`${name.padEnd(40)}${phases.map((x) => f(x).padStart(22)).join('')}`);
  console.log(
    `\nbench:bot — the bot in its own process; ${o.turns} agent turns a session, ${o.maxTokens} tokens a reply at ${o.tokenDelayMs} ms/token; scoring pool ${o.scoringPool}; ${availableParallelism()} cores`,
  );
  row('people', (x) => String(x.people));
  row('load average before -> after (1 min)', (x) => `${x.loadAverage.before[0]} -> ${x.loadAverage.after[0]}`);
  row('ack p50 / p99 / max (ms)', (x) => `${x.ackMs.p50} / ${x.ackMs.p99} / ${x.ackMs.max}`);
  for (const k of ['start', 'consent', 'rating'])
    row(`  ${k} p50 / p99`, (x) => `${x.ackMsByKind[k].p50} / ${x.ackMsByKind[k].p99}`);
  row('own time per turn p50 / p99 (ms)', (x) => `${x.ownTimePerTurnMs.p50} / ${x.ownTimePerTurnMs.p99}`);
  row(
    'of which queued in discord.js p50 / p99',
    (x) => `${x.restQueueInOwnTimeMs.p50} / ${x.restQueueInOwnTimeMs.p99}`,
  );
  row('  share of own time queued in discord.js', (x) => `${x.restQueueShareOfOwnTime}`);
  row(
    '  of it held by the global limit p50 / p99',
    (x) => `${x.restGlobalLimitInOwnTimeMs.p50} / ${x.restGlobalLimitInOwnTimeMs.p99}`,
  );
  row(
    'own time less the global limit p50 / p99',
    (x) => `${x.ownTimeLessGlobalLimitMs.p50} / ${x.ownTimeLessGlobalLimitMs.p99}`,
  );
  row('  way in (to messageCreate) p50 / p99', (x) => `${x.ownTimeSplitMs.wayIn.p50} / ${x.ownTimeSplitMs.wayIn.p99}`);
  row(
    '  bot work (less the agent) p50 / p99',
    (x) => `${x.ownTimeSplitMs.botWork.p50} / ${x.ownTimeSplitMs.botWork.p99}`,
  );
  for (let k = 1; k < o.turns; k++)
    row(
      `    after reply ${k}${k === o.turns - 1 ? ' (the answer)' : ''} p50 / p99`,
      (x) => `${x.botWorkByReplyMs[k].p50} / ${x.botWorkByReplyMs[k].p99}`,
    );
  row(
    '    while another answer awaits its result (n) p50 / p99',
    (x) => `(${x.botWorkWhileScoringMs.n}) ${x.botWorkWhileScoringMs.p50} / ${x.botWorkWhileScoringMs.p99}`,
  );
  row(
    '    while none does (n) p50 / p99',
    (x) => `(${x.botWorkNotWhileScoringMs.n}) ${x.botWorkNotWhileScoringMs.p50} / ${x.botWorkNotWhileScoringMs.p99}`,
  );
  row(
    '  way out (post sent to shown) p50 / p99',
    (x) => `${x.ownTimeSplitMs.wayOut.p50} / ${x.ownTimeSplitMs.wayOut.p99}`,
  );
  row('server time per turn p50 / p99 (ms)', (x) => `${x.modelTimePerTurnMs.p50} / ${x.modelTimePerTurnMs.p99}`);
  row(
    '  the request as the bot timed it p50 / p99',
    (x) => `${x.agentRequestInBotMs.p50} / ${x.agentRequestInBotMs.p99}`,
  );
  row('db round trips per turn', (x) => `${x.dbRoundTripsPerTurn}`);
  row("  in a reply's turn p50 / p99", (x) => `${x.dbRoundTripsInReplyTurn.p50} / ${x.dbRoundTripsInReplyTurn.p99}`);
  row('Discord REST requests per turn', (x) => `${x.restRequestsPerTurn}`);
  row('REST requests per second', (x) => `${x.restRequestsPerSecond}`);
  row('REST queue wait per request p50 / p99', (x) => `${x.restQueueWaitMs.p50} / ${x.restQueueWaitMs.p99}`);
  row('DB pool wait p50 / p99 (ms)', (x) => `${x.dbPoolWaitMs.p50} / ${x.dbPoolWaitMs.p99}`);
  row(
    "  in a reply's turn, summed, p50 / p99",
    (x) => `${x.dbPoolWaitInReplyTurnMs.p50} / ${x.dbPoolWaitInReplyTurnMs.p99}`,
  );
  row('bot CPU s per turn', (x) => `${x.cpuSecondsPerTurn}`);
  row('event-loop delay p99 / max (ms)', (x) => `${x.eventLoopDelayMs.p99} / ${x.eventLoopDelayMs.max}`);
  row('heap per open session (KiB)', (x) => `${x.heapPerOpenSessionKiB}`);
  row('answer to result p50 / p99 (ms)', (x) => `${x.answerToResultMs.p50} / ${x.answerToResultMs.p99}`);
  row('answered / scored / rated', (x) => `${x.answered} / ${x.scored} / ${x.rated}`);
  row('wall (s)', (x) => `${x.wallSeconds}`);
}
