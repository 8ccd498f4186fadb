// After a restart and over time: finishing what a previous run left halfway (messages stored but never shown,
// replies sent while the channel was down, answers never scored) and expiring sessions left idle.
import type { Session } from '../../prisma/generated/client.ts';
import { dialogueTurnWhere } from '../../prisma/cohorts.ts';
import type { AgentCache } from './agents.ts';
import type { EngineContext } from './context.ts';
import type { TurnScript } from './turns.ts';
import type { PendingWork, ResumedView } from './types.ts';

export class Recovery {
  private expiryTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly ctx: EngineContext,
    private readonly turns: TurnScript,
    private readonly agents: AgentCache,
  ) {}

  /**
   * What a (re)started channel must finish: sessions whose agent owes a message, agent messages stored but
   * never shown, answers never evaluated.
   */
  async pendingWork(): Promise<PendingWork[]> {
    const { ctx } = this;
    const sessions = await ctx.retry(() =>
      ctx.prisma.session.findMany({
        where: {
          channel: ctx.options.channel,
          OR: [{ status: 'active' }, { status: 'answered', OR: [{ resultShownAt: null }, { ratingAskedAt: null }] }],
        },
        // Only the last dialogue turn: readiness and the sweep (sweep.ts) read this often.
        include: { turns: { where: dialogueTurnWhere, orderBy: { index: 'desc' }, take: 1 } },
        orderBy: { startedAt: 'asc' },
      }),
    );
    const work: PendingWork[] = [];
    for (const { turns, ...session } of sessions) {
      const last = turns[0];
      if (last && last.role === 'agent' && last.externalMessageId === null)
        work.push({ kind: 'show', session, turn: last });
      else if (session.status === 'answered') work.push({ kind: 'evaluate', session });
      else if (!last || last.role === 'human') work.push({ kind: 'agent', session });
    }
    return work;
  }

  /**
   * Finishes what a previous run left halfway (`work`; default: all of pendingWork()), every session at once, so
   * that one whose agent is slow (a first load, a server away) holds up no other: `viewFor` gives the view to
   * show it in and the hooks that tell its person to wait (null: it cannot be shown here, e.g. its thread is
   * gone; it is left as it is). Each session counts as attended from this call on (the sweep leaves it be).
   */
  async resume(viewFor: (session: Session) => Promise<ResumedView | null>, work?: PendingWork[]): Promise<number> {
    const { ctx } = this;
    const log = ctx.deps.log;
    const done = await Promise.all(
      (work ?? (await this.pendingWork())).map((w) =>
        ctx.attend(w.session.id, async () => {
          try {
            const shown = await viewFor(w.session);
            if (!shown) {
              log?.warn({ session: w.session.id, kind: w.kind }, 'cannot show this session here; leaving it for later');
              return false;
            }
            log?.debug({ session: w.session.id, kind: w.kind }, 'resuming session');
            await this.turns.advance(w.session.id, shown.view, shown.hooks);
            return true;
          } catch (err) {
            log?.error({ err: (err as Error).message, session: w.session.id }, 'cannot resume session');
            return false;
          }
        }),
      ),
    );
    return done.filter(Boolean).length;
  }

  /**
   * Active sessions of this channel waiting for the person's reply to a shown agent message, with that
   * message's channel id: a restarted channel reads what the person sent after it while it was down.
   */
  async awaitingReplies(): Promise<{ session: Session; owner: string; after: string }[]> {
    const { ctx } = this;
    const sessions = await ctx.retry(() =>
      ctx.prisma.session.findMany({
        where: { channel: ctx.options.channel, status: 'active' },
        include: {
          turns: { where: dialogueTurnWhere, orderBy: { index: 'desc' }, take: 1 },
          participant: { select: { discordUserId: true } },
        },
        orderBy: { startedAt: 'asc' },
      }),
    );
    return sessions.flatMap(({ turns, participant, ...session }) => {
      const last = turns[0];
      return last?.role === 'agent' && last.externalMessageId
        ? [{ session, owner: participant.discordUserId, after: last.externalMessageId }]
        : [];
    });
  }

  /**
   * Ends the active sessions of a thread channel that never got their thread (the process died between the
   * session's row and its thread): nobody can reach them, and each holds its person's one active session.
   * Called at a start, before which no start of this run can be in flight (`startedBefore`).
   */
  async endThreadless(startedBefore: Date): Promise<Session[]> {
    const { ctx } = this;
    const orphans = await ctx.retry(() =>
      ctx.prisma.session.findMany({
        where: { channel: ctx.options.channel, status: 'active', threadId: null, startedAt: { lt: startedBefore } },
      }),
    );
    const ended: Session[] = [];
    for (const s of orphans) {
      if (await ctx.endSession(s.id, 'abandoned', 'start-interrupted')) ended.push(s);
    }
    if (ended.length)
      ctx.deps.log?.warn(
        { sessions: ended.map((s) => s.id) },
        'ended sessions whose start was cut off before their thread opened',
      );
    return ended;
  }

  /** Expires active sessions idle for longer than the configured time; returns them. */
  async expireIdle(now = new Date()): Promise<Session[]> {
    const { ctx } = this;
    const cutoff = new Date(now.getTime() - ctx.options.idleMinutes * 60_000);
    const idle = await ctx.retry(() =>
      ctx.prisma.session.findMany({
        where: { status: 'active', channel: ctx.options.channel, lastActivityAt: { lt: cutoff } },
      }),
    );
    const expired: Session[] = [];
    for (const s of idle) {
      // A session being written is left alone, unless it is only waiting for its agent: that wait ends with it.
      if (ctx.isBusy(s.id) && !this.agents.waitingForAgent(s.id)) continue;
      const ended = await ctx.endSession(s.id, 'expired', 'idle', undefined, now, cutoff);
      if (ended) expired.push({ ...s, status: 'expired', endedAt: now, endReason: 'idle' });
    }
    if (expired.length) ctx.deps.log?.info({ count: expired.length }, 'expired idle sessions');
    return expired;
  }

  /** Runs expireIdle every `everyMs`, handing what expired to `onExpired`. */
  startExpiry(everyMs: number, onExpired: (s: Session) => void | Promise<void>): void {
    this.expiryTimer = setInterval(() => {
      this.expireIdle()
        .then(async (list) => {
          for (const s of list) await onExpired(s);
        })
        .catch((err) => this.ctx.deps.log?.warn({ err: (err as Error).message }, 'idle expiry failed'));
    }, everyMs);
    this.expiryTimer.unref();
  }

  stopExpiry(): void {
    if (this.expiryTimer) clearInterval(this.expiryTimer);
    this.expiryTimer = null;
  }
}
