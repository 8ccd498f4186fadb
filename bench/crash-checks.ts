// What the crash soak (bench/crash.ts) checks at the end, from the database and from what the fake Discord saw:
//   - every session answered, scored, its result and rating prompt shown; or ended with the person told why;
//   - every message Discord accepted from a person stored once, or answered by the bot (told to send it again,
//     to wait, that the session ended); a copy of a reply whose words are stored from another message is
//     counted apart (nothing the person wrote is lost), as is a message sent after the agent's final answer;
//   - no agent message, result or rating prompt shown twice;
//   - no session silent for longer than the agent deadline while the bot ran: from the moment the bot owed the
//     person something (their reply, the result, the rating prompt) or the bot's start, whichever is later,
//     to the bot's next post in the thread or its death; and no person giving up on a session after the bot
//     ran for `giveUpMs` in all without moving it (silent across restarts).
// Each violation names the bot's life (epoch) it happened in, so the driver can tie it to the kill before it,
// and the session's time line (bench/crash-timeline.ts) is written beside the bot's logs.
import type { FakeDiscord, Shown } from '../testing/fake-discord.ts';
import type { PrismaClient } from '../prisma/generated/client.ts';
import type { Epoch } from './crash-process.ts';
import type { PersonSession, Sent } from './crash-people.ts';
import { writeTimeline } from './crash-timeline.ts';
import { percentile } from '../tasks/stats.ts';

export interface Violation {
  kind:
    | 'unfinished'
    | 'unscored'
    | 'no-result'
    | 'no-rating-prompt'
    | 'ended-untold'
    | 'lost-message'
    | 'duplicate-post'
    | 'silent'
    | 'gave-up'
    | 'bot-exited';
  /** The epoch it happened in (the restart after kill `epoch`), when it can be placed. */
  epoch: number | null;
  detail: string;
}

export interface SoakRecord {
  fake: FakeDiscord;
  prisma: PrismaClient;
  epochs: Epoch[];
  sent: Sent[];
  sessions: PersonSession[];
  deadlineMs: number;
  giveUpMs: number;
  endAt: number;
  /** Where the time lines of sessions with a violation go, and the phase's start (their zero). */
  logDir: string;
  t0: number;
}

export interface Figures {
  sessions: number;
  rated: number;
  answered: number;
  endedTold: number;
  gaveUp: number;
  messages: number;
  stored: number;
  told: number;
  copiesUnanswered: number;
  late: number;
  /** The longest a session waited on the running bot (the deadline's yardstick). */
  maxSilenceMs: number;
  /** The agent's own time per message (turn.latencyMs): how much of a wait was the model's. */
  agentMs: { p50: number; max: number };
}

const ENDED = /session (has ended|had to end|expired)|You ended this session/;
const agentNo = (s: Shown) => /^\*\*Agent\*\* \(message (\d+) of \d+\)/.exec(s.content)?.[1];
const refOf = (s: Shown): string | undefined => s.raw?.message_reference?.message_id;

/** The bot's life at driver time `t` (null: it was down). */
export function epochAt(epochs: Epoch[], t: number): Epoch | null {
  return epochs.find((e) => e.spawnAt <= t && t < (e.killAt ?? e.exitAt ?? Infinity)) ?? null;
}

/**
 * The bot's life a fault at driver time `t` is charged to: the restart after the kill that interrupted what was
 * going on at `t` (or the life that was running at `t`, when it was not killed).
 */
export function chargedTo(epochs: Epoch[], t: number): number | null {
  const e = epochAt(epochs, t) ?? epochs.find((x) => x.spawnAt > t) ?? null;
  if (!e) return null;
  return e.killAt !== null && e.point !== 'end' ? e.n + 1 : e.n;
}

export async function checkSoak(r: SoakRecord): Promise<{ violations: Violation[]; figures: Figures }> {
  const violations: Violation[] = [];
  const broken = new Map<string, string>();
  const add = (
    kind: Violation['kind'],
    epoch: number | null,
    detail: string,
    s?: { id: string; threadId: string | null },
  ) => {
    violations.push({ kind, epoch, detail });
    if (s?.threadId) broken.set(s.id, s.threadId);
  };
  const sessions = await r.prisma.session.findMany({
    include: { evaluation: true, participant: true, turns: { orderBy: { index: 'asc' } } },
    orderBy: { startedAt: 'asc' },
  });
  const nameOf = new Map(r.sessions.map((s) => [s.threadId, `person${s.person}`]));
  const posts = (threadId: string | null) => (threadId ? r.fake.inChannel(threadId) : []);
  const describe = (s: (typeof sessions)[number]) => {
    const shown = posts(s.threadId).map((p) => (agentNo(p) ? `agent#${agentNo(p)}` : p.content.slice(0, 24)));
    return `session ${s.id.slice(0, 8)} (${nameOf.get(s.threadId ?? '') ?? 'no thread'}, ${s.status}${s.endReason ? `/${s.endReason}` : ''}): turns [${s.turns.map((t) => `${t.role}${t.role === 'agent' && !t.externalMessageId ? '(unshown)' : ''}`).join(', ')}]; thread shows [${shown.join(' | ')}]`;
  };

  // Sessions: finished and scored, or ended with the person told.
  const figures: Figures = {
    sessions: sessions.length,
    rated: 0,
    answered: 0,
    endedTold: 0,
    gaveUp: r.sessions.filter((s) => s.outcome === 'gave-up').length,
    messages: 0,
    stored: 0,
    told: 0,
    copiesUnanswered: 0,
    late: 0,
    maxSilenceMs: 0,
    agentMs: { p50: 0, max: 0 },
  };
  const agentMs = sessions.flatMap((s) =>
    s.turns.flatMap((t) => (t.role === 'agent' && t.latencyMs !== null ? [t.latencyMs] : [])),
  );
  if (agentMs.length) figures.agentMs = { p50: percentile(agentMs, 50), max: Math.max(...agentMs) };
  const stopReplies = [...r.fake.interactions.values()]
    .flatMap((i) => r.fake.replies(i))
    .filter((x) => x.content.includes('Your session has ended'));
  for (const s of sessions) {
    const shown = posts(s.threadId);
    // Charged to the restart after the kill that interrupted the session's last step.
    const epoch = chargedTo(
      r.epochs,
      Math.max(s.lastActivityAt.getTime() - performance.timeOrigin, shown.at(-1)?.at ?? 0),
    );
    if (s.status === 'active') add('unfinished', epoch, describe(s), s);
    else if (s.status === 'answered') {
      figures.answered++;
      if (!s.evaluation) add('unscored', epoch, describe(s), s);
      if (!shown.some((p) => p.content.startsWith('**Result:**') || p.content.includes('could not be scored')))
        add('no-result', epoch, describe(s), s);
      if (!s.ratingAskedAt || !shown.some((p) => p.content.includes('How helpful')))
        add('no-rating-prompt', epoch, describe(s), s);
      if ((await r.prisma.rating.count({ where: { sessionId: s.id } })) > 0) figures.rated++;
    } else {
      const told = shown.some(
        (p) =>
          ENDED.test(p.content) || (p.content.length > 0 && !agentNo(p) && !p.content.startsWith('<@') && !refOf(p)),
      );
      const stopped =
        s.endReason === 'stopped' &&
        stopReplies.some((x) => r.fake.interactions.get(x.interactionId!)?.userId === s.participant.discordUserId);
      const gaveUp = r.sessions.some((x) => x.threadId === s.threadId && x.outcome === 'gave-up');
      if (gaveUp) continue; // a violation of its own, below
      if (told || stopped) figures.endedTold++;
      else add('ended-untold', epoch, describe(s), s);
    }
  }

  // Nothing shown twice.
  for (const s of sessions) {
    const shown = posts(s.threadId);
    const groups = new Map<string, Shown[]>();
    for (const p of shown) {
      const key = agentNo(p)
        ? `agent message ${agentNo(p)}`
        : p.content.startsWith('**Result:**')
          ? 'result'
          : p.content.includes('How helpful')
            ? 'rating prompt'
            : null;
      if (key) groups.set(key, [...(groups.get(key) ?? []), p]);
    }
    for (const [key, list] of groups) {
      if (list.length > 1)
        add(
          'duplicate-post',
          epochAt(r.epochs, list[1]!.at)?.n ?? null,
          `${key} shown ${list.length} times: ${describe(s)}`,
          s,
        );
    }
  }

  // Every person's message stored once, or answered.
  const turnsById = new Map(
    sessions.flatMap((s) =>
      s.turns.filter((t) => t.externalMessageId).map((t) => [t.externalMessageId!, { t, s }] as const),
    ),
  );
  for (const m of r.sent) {
    figures.messages++;
    if (turnsById.has(m.id)) {
      figures.stored++;
      continue;
    }
    const shown = posts(m.threadId);
    if (shown.some((p) => refOf(p) === m.id)) {
      figures.told++;
      continue;
    }
    if (shown.some((p) => p.at < m.at && (/— final answer/.test(p.content) || ENDED.test(p.content)))) {
      figures.late++;
      continue;
    }
    const session = sessions.find((s) => s.threadId === m.threadId);
    if (session?.turns.some((t) => t.role === 'human' && t.content === m.content)) {
      figures.copiesUnanswered++;
      continue;
    }
    // Which later lives of the bot finished their start (resume, then catch-up) while the session was still open.
    const closed = r.sessions.find((x) => x.threadId === m.threadId)?.closedAt ?? r.endAt;
    const readAfter = r.epochs
      .filter((e) => e.readyAt !== null && e.readyAt > m.at && e.readyAt < closed)
      .map((e) => e.n);
    const at = epochAt(r.epochs, m.at);
    const where = at
      ? `bot life ${at.n} running, ${m.live ? 'its gateway connected' : 'its gateway not yet connected'}`
      : 'the bot down';
    add(
      'lost-message',
      chargedTo(r.epochs, m.at),
      `${nameOf.get(m.threadId) ?? m.threadId}'s ${m.why} to agent message ${m.question} (${m.id}), sent with ${where}, neither stored nor answered; lives that finished start() (resume and catch-up) before the session closed: [${readAfter.join(', ')}]: ${session ? describe(session) : 'no session'}`,
      session,
    );
  }

  // Silence while the bot ran.
  for (const s of sessions) {
    if (!s.threadId) continue;
    for (const gap of owedIntervals(
      posts(s.threadId),
      r.sent.filter((m) => m.threadId === s.threadId),
      r.endAt,
    )) {
      for (const e of r.epochs) {
        const from = Math.max(gap.from, e.spawnAt);
        const to = Math.min(gap.to, e.killAt ?? e.exitAt ?? r.endAt);
        figures.maxSilenceMs = Math.max(figures.maxSilenceMs, to - from);
        if (to - from > r.deadlineMs) {
          const before = r.epochs.find((x) => x.n === e.n - 1);
          add(
            'silent',
            e.n,
            `silent ${((to - from) / 1000).toFixed(1)} s in epoch ${e.n} (restart after a kill ${before?.point ?? 'none'}) while owing ${gap.owed}; ${describe(s)}; log ${e.logFile}`,
            s,
          );
        }
      }
    }
  }

  // Silence across restarts: a person who gave up waited `giveUpMs` of the bot's running time for nothing.
  for (const p of r.sessions.filter((x) => x.outcome === 'gave-up')) {
    const s = sessions.find((x) => x.threadId === p.threadId);
    add(
      'gave-up',
      chargedTo(r.epochs, p.closedAt ?? r.endAt),
      `${nameOf.get(p.threadId)} stopped the session after ${r.giveUpMs / 1000} s of the bot's running time without progress: ${s ? describe(s) : p.threadId}`,
      s,
    );
  }

  for (const e of r.epochs) {
    if (e.killAt === null && e.exitAt !== null)
      add('bot-exited', e.n, `the bot exited by itself (code ${e.exitCode}); log ${e.logFile}`);
  }
  for (const [id, threadId] of broken) {
    const file = await writeTimeline({
      dir: r.logDir,
      sessionId: id,
      threadId,
      fake: r.fake,
      sent: r.sent,
      epochs: r.epochs,
      t0: r.t0,
    });
    for (const v of violations) if (v.detail.includes(`session ${id.slice(0, 8)}`)) v.detail += `; time line ${file}`;
  }
  return { violations, figures };
}

/**
 * The stretches in which the bot owed the person something in a thread: from its opening post to the first agent
 * message; from the person's reply to the next post (an agent message, a reply to it); from the final answer to
 * the result and from the result to the rating prompt. Every post resets the clock; an answer to the person's
 * message (however it is worded) settles what they sent.
 */
export function owedIntervals(
  posts: Shown[],
  sent: Sent[],
  endAt: number,
): { from: number; to: number; owed: string }[] {
  const events = [
    ...posts.map((p) => ({ at: p.at, post: p, msg: null as Sent | null })),
    ...sent.map((m) => ({ at: m.at, post: null as Shown | null, msg: m })),
  ].sort((a, b) => a.at - b.at);
  const out: { from: number; to: number; owed: string }[] = [];
  let owed: string | null = null;
  let since = 0;
  let owedMsg: string | null = null;
  let awaitingPerson = false;
  const settle = (at: number, next: string | null) => {
    if (owed) out.push({ from: since, to: at, owed });
    owed = next;
    since = at;
  };
  for (const { at, post, msg } of events) {
    if (msg) {
      if (!owed && awaitingPerson) {
        settle(at, `an answer to ${msg.why} ${msg.id}`);
        owedMsg = msg.id;
        awaitingPerson = false;
      }
      continue;
    }
    const p = post!;
    const ref = refOf(p);
    if (ref) {
      if (ref === owedMsg) {
        settle(at, null);
        awaitingPerson = true;
      }
      continue;
    }
    if (/— final answer/.test(p.content)) settle(at, 'the result');
    else if (agentNo(p)) {
      settle(at, null);
      awaitingPerson = true;
    } else if (p.content.includes('How helpful') || ENDED.test(p.content)) {
      // The rating prompt, alone or under the result (one message since the result carries it).
      settle(at, null);
      awaitingPerson = false;
    } else if (p.content.startsWith('**Result:**') || p.content.includes('could not be scored'))
      settle(at, 'the rating prompt');
    else if (p.content.startsWith('<@')) settle(at, 'the first agent message');
    else if (owed) settle(at, owed);
  }
  settle(endAt, null);
  return out;
}
