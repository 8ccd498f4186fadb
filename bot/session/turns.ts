// The turn script: agent speaks -> stored -> shown -> person replies -> ... -> answer -> evaluation -> result
// -> rating. Every turn is stored before it is shown, and each step is safe to repeat after a restart. The agent's
// turn itself is agent-step.ts; the evaluation, rating and comment are answers.ts.
import { PASTE_NOTICE, refreshSessionQuality } from '../../prisma/quality-store.ts';
import type { DialogueTurn } from '../../tasks/protocol.ts';
import { checkHumanMessage, sanitizeText } from '../../tasks/protocol.ts';
import type { Prisma, Session } from '../../prisma/generated/client.ts';
import { UniqueViolationError, toDatabaseError } from '../../prisma/errors.ts';
import { findParticipant } from '../../prisma/participant-store.ts';
import {
  appendHumanTurn,
  markRatingAsked,
  markResultAndRatingShown,
  markResultShown,
  markTurnShown,
} from '../../prisma/session-store.ts';
import { messageLimitRefusal } from '../limits.ts';
import type { AgentSteps } from './agent-step.ts';
import type { AgentCache } from './agents.ts';
import type { Answers } from './answers.ts';
import { dialogueTurns, isDialogueTurn } from '../../prisma/cohorts.ts';
import type { EngineContext, SessionWithTurns } from './context.ts';
import { ScoringClosedError } from './scoring.ts';
import {
  TurnRejectedError,
  type AgentStep,
  type EvaluatedSession,
  type Hooks,
  type SessionState,
  type SessionView,
} from './types.ts';

/**
 * How long the agent may write before the person is shown that it is typing (then again every 8 s, as Discord's
 * indicator lasts about 10 s): a reply that comes sooner needs no indicator, and each one is a request that
 * counts against the channel's request limits (Discord's 50 a second per bot; bench:bot, bench/RESULTS.md).
 */
export const TYPING_AFTER_MS = 2_000;
const TYPING_EVERY_MS = 8_000;

export class TurnScript {
  /** External ids of human messages being stored now: a redelivery meanwhile is a duplicate. */
  private readonly inFlightMessages = new Set<string>();

  constructor(
    private readonly ctx: EngineContext,
    private readonly agents: AgentCache,
    private readonly steps: AgentSteps,
    private readonly answers: Answers,
  ) {}

  /**
   * Does what the session owes next, showing each step through `view`: the agent's message (generated and
   * stored, or stored earlier but never shown), then, once the agent has answered, the evaluation, the result
   * and the rating prompt. Returns whose move it is. Safe to call again at any time (after a restart, a
   * duplicate event): what is stored and shown is never done twice.
   */
  advance(sessionId: string, view: SessionView, hooks?: Hooks): Promise<SessionState> {
    return this.ctx.attend(sessionId, () => this.advanceAttended(sessionId, view, hooks, false));
  }

  /**
   * `agentOwes`: the caller has just stored the person's message, so the agent's turn is next and the session
   * need not be read first (the agent's step reads it under the session's lock, and says when it owes nothing).
   */
  private async advanceAttended(
    sessionId: string,
    view: SessionView,
    hooks: Hooks | undefined,
    agentOwes: boolean,
  ): Promise<SessionState> {
    for (let look = !agentOwes; ; look = true) {
      if (look) {
        const s = await this.ctx.load(sessionId, hooks);
        if (!s) return 'ended';
        const last = s.turns.filter(isDialogueTurn).at(-1);
        if (last?.role === 'agent' && last.externalMessageId === null) {
          // Stored but never shown (a restart between the two): show it now.
          await this.present(await this.steps.stepOf(last.id, s), view, hooks);
          continue;
        }
        if (s.status === 'answered') {
          await this.finish(s, view, hooks);
          return 'awaiting-rating';
        }
        if (s.status !== 'active') return 'ended';
        if (last?.role === 'agent') return 'awaiting-human';
      }
      const stopTyping = typingWhileWriting(view, this.ctx.options.typingAfterMs ?? TYPING_AFTER_MS);
      let step: AgentStep | null;
      try {
        step = await this.steps.agentStep(sessionId, hooks);
      } catch (err) {
        if (err instanceof TurnRejectedError) {
          await view.notice(err.message);
          return 'ended';
        }
        throw err;
      } finally {
        stopTyping();
      }
      // The engine closed while the agent wrote: nothing more here (the next start resumes it). Otherwise the
      // session changed under us (stopped, answered elsewhere): look again.
      if (!step) {
        if (this.ctx.closing) return 'ended';
        continue;
      }
      await this.present(step, view, hooks);
      // A question shown: the person's move (their reply, when it comes, is stored and answered by its own
      // call). An answer: look again, for its evaluation, result and rating prompt.
      if (!step.answered) return 'awaiting-human';
    }
  }

  /** Stores the person's reply, then lets the agent answer it (see advance). Null for a duplicate message. */
  receive(
    sessionId: string,
    text: string,
    externalMessageId: string | null,
    view: SessionView,
    hooks?: Hooks,
  ): Promise<SessionState | null> {
    // Attended from the store on: the stored message owes the agent's answer, which this call gives, not the sweep.
    return this.ctx.attend(sessionId, async () => {
      const r = await this.humanTurn(sessionId, text, externalMessageId, hooks);
      if (r.duplicate) return null;
      return this.ctx.attend(sessionId, () => this.advanceAttended(sessionId, view, hooks, true));
    });
  }

  private async present(step: AgentStep, view: SessionView, hooks?: Hooks): Promise<void> {
    const shownAs = await view.showAgentMessage(step);
    await this.markShown(step.turnId, shownAs, hooks, step.sessionId);
  }

  /**
   * Shows what an answered session still owes: the result, then the rating prompt, each recorded once shown
   * (a restart between a post and its record re-posts it; the view makes that post idempotent).
   */
  private async finish(s: SessionWithTurns, view: SessionView, hooks?: Hooks): Promise<void> {
    const { ctx } = this;
    const sessionId = s.id;
    if (!s.resultShownAt) {
      // Where the view shows the answer's place in the scoring queue, that notice says what happens meanwhile.
      if (!view.showScoring) await view.typing?.().catch(() => {});
      let result: EvaluatedSession | null = null;
      try {
        result = await this.answers.evaluate(
          sessionId,
          hooks,
          (state) => void view.showScoring?.(sessionId, state).catch(() => {}),
        );
      } catch (err) {
        // The engine is stopping with this answer still waiting for a place: the next start scores it.
        if (err instanceof ScoringClosedError) return;
        // The answer is stored; a later advance() (or the next start) scores it. The rating need not wait.
        ctx.deps.log?.error({ err: (err as Error).message, session: sessionId }, 'evaluation failed');
        ctx.deps.observer?.evaluationFailed?.();
        // Told once (the rating prompt follows it); a later try (the sweep, a restart) says nothing until it scores.
        if (!s.ratingAskedAt) await view.showResult({ sessionId, error: 'evaluation failed' });
      }
      const together = !s.ratingAskedAt && view.showResultWithRating !== undefined;
      // The person hears it here, where they played, if their replies pasted the reference's code (it flags the
      // session). Otherwise the quality is written with the record of the result shown, where there is one.
      const quality = result ? await this.tellIfFlagged(s, result, view, hooks, together) : undefined;
      if (result && together) {
        // One message where each one counts against a limit (Discord's 50 requests a second for the bot).
        await view.showResultWithRating!(result);
        const at = new Date();
        await ctx.retry(() => markResultAndRatingShown(ctx.prisma, sessionId, at, quality), hooks);
        ctx.sessions.patch(sessionId, { resultShownAt: at, ratingAskedAt: at });
        return;
      }
      if (result) {
        await view.showResult(result);
        const at = new Date();
        await ctx.retry(() => markResultShown(ctx.prisma, sessionId, at), hooks);
        ctx.sessions.patch(sessionId, { resultShownAt: at });
      }
    }
    if (!s.ratingAskedAt) {
      await view.askRating(sessionId);
      const at = new Date();
      await ctx.retry(() => markRatingAsked(ctx.prisma, sessionId, at), hooks);
      ctx.sessions.patch(sessionId, { ratingAskedAt: at });
    }
  }

  /**
   * Brings the answered session's quality up to date from what is held here (its turns, task and evaluation); a
   * session newly flagged for a pasted reference is told so (once).
   */
  private async tellIfFlagged(
    s: SessionWithTurns,
    result: EvaluatedSession,
    view: SessionView,
    hooks?: Hooks,
    deferWrite = false,
  ): Promise<Prisma.Sql | undefined> {
    const r = await this.ctx.retry(
      () => refreshSessionQuality(this.ctx.prisma, { ...s, evaluation: result.outcome }, deferWrite),
      hooks,
    );
    if (r.flagged) await view.notice(PASTE_NOTICE);
    return r.write;
  }

  /** Records the channel's id of the message that showed an agent turn (it has reached the person). */
  async markShown(turnId: string, externalMessageId: string, hooks?: Hooks, sessionId?: string): Promise<void> {
    await this.ctx.retry(() => markTurnShown(this.ctx.prisma, turnId, externalMessageId), hooks);
    this.ctx.sessions.turnShown(turnId, externalMessageId, sessionId);
  }

  /**
   * Stores the person's message. Returns `duplicate: true` (and does nothing) for a message already stored or
   * being handled. Throws TurnRejectedError when it cannot be taken (the message says why).
   */
  async humanTurn(
    sessionId: string,
    text: string,
    externalMessageId: string | null,
    hooks?: Hooks,
  ): Promise<{ duplicate: boolean; turnId?: string }> {
    const { ctx } = this;
    if (externalMessageId && this.inFlightMessages.has(externalMessageId)) return { duplicate: true };
    if (ctx.isBusy(sessionId)) {
      // A redelivery of a stored message is a duplicate, not one to refuse. Asked only here: otherwise the
      // session's turns, read below anyway, say it (one round trip less a message; bench:bot, bench/RESULTS.md).
      const seen =
        externalMessageId &&
        (await ctx.retry(
          () => ctx.prisma.turn.findUnique({ where: { externalMessageId }, select: { id: true } }),
          hooks,
        ));
      if (seen) return { duplicate: true };
      throw new TurnRejectedError('The agent is still writing. Please wait for its message, then answer.');
    }
    if (externalMessageId) this.inFlightMessages.add(externalMessageId);
    try {
      return await ctx.locked(sessionId, async () => {
        const s = await ctx.load(sessionId, hooks);
        if (!s) throw new TurnRejectedError('This session no longer exists.');
        // A message is only ever stored in its own thread's session.
        if (externalMessageId && s.turns.some((t) => t.externalMessageId === externalMessageId))
          return { duplicate: true };
        if (s.status !== 'active') throw new TurnRejectedError(ended(s));
        const last = dialogueTurns(s.turns).at(-1);
        if (!last || last.role !== 'agent')
          throw new TurnRejectedError("Please wait for the agent's message, then answer.");
        let content: string;
        try {
          content = checkHumanMessage(sanitizeText(text), s.task.kind);
        } catch (err) {
          throw new TurnRejectedError((err as Error).message);
        }
        const limits = ctx.options.limits;
        if (limits) {
          const refusal = await ctx.retry(
            () => messageLimitRefusal(ctx.prisma, s.participantId, content.length, limits),
            hooks,
          );
          if (refusal) throw new TurnRejectedError(refusal);
        }
        try {
          const turn = await ctx.appendTurn(
            sessionId,
            () => appendHumanTurn(ctx.prisma, sessionId, { content, externalMessageId }),
            hooks,
          );
          if (!turn) {
            // Ended or deleted by someone else since this process read it: say which, as read now.
            const now = await ctx.load(sessionId, hooks);
            throw new TurnRejectedError(now && now.status !== 'active' ? ended(now) : 'This session no longer exists.');
          }
          // The agent's step that answers it reads the session as written, from memory (session-cache.ts).
          ctx.sessions.appendTurn(sessionId, turn, { lastActivityAt: turn.createdAt });
          ctx.deps.observer?.humanTurn?.();
          return { duplicate: false, turnId: turn.id };
        } catch (err) {
          const e = toDatabaseError(err);
          if (e instanceof UniqueViolationError && e.fields.includes('externalMessageId')) return { duplicate: true };
          throw e;
        }
      });
    } finally {
      if (externalMessageId) this.inFlightMessages.delete(externalMessageId);
    }
  }

  /** Ends the person's active session at their request; returns it, or null when they had none. */
  stop(externalId: string, hooks?: Hooks): Promise<Session | null> {
    const { ctx } = this;
    return ctx.personLock.run(externalId, async () => {
      const p = await ctx.retry(() => findParticipant(ctx.prisma, externalId), hooks);
      if (!p) return null;
      const s = await ctx.retry(
        () => ctx.prisma.session.findFirst({ where: { participantId: p.id, status: 'active' } }),
        hooks,
      );
      if (!s) return null;
      const end = async () => {
        await ctx.endSession(s.id, 'abandoned', 'stopped', hooks);
        return ctx.retry(() => ctx.prisma.session.findUniqueOrThrow({ where: { id: s.id } }), hooks);
      };
      // An agent waiting for its server holds the session's lock until the session ends: end it without the
      // lock (the wait sees it and stores nothing). Otherwise wait for a turn being written to be stored.
      return this.agents.waitingForAgent(s.id) ? end() : ctx.locked(s.id, end);
    });
  }

  /** The dialogue of a session so far, for showing it again (system notices left out). */
  async transcript(sessionId: string, hooks?: Hooks): Promise<DialogueTurn[]> {
    const turns = await this.ctx.retry(
      () => this.ctx.prisma.turn.findMany({ where: { sessionId }, orderBy: { index: 'asc' } }),
      hooks,
    );
    return dialogueTurns(turns);
  }
}

/** What a person writing in an ended session is told. */
function ended(s: Pick<Session, 'status' | 'endReason'>): string {
  return `This session has ended (${s.endReason ?? s.status}). Start a new one with /task start.`;
}

/**
 * Shows that the agent is typing while it writes, from `afterMs` on: never awaited, so the indicator's
 * request never delays the turn. Returns the function that stops it.
 */
function typingWhileWriting(view: SessionView, afterMs: number): () => void {
  const typing = view.typing;
  if (!typing) return () => {};
  const show = () => void typing().catch(() => {});
  let every: NodeJS.Timeout | null = null;
  const first = setTimeout(() => {
    show();
    every = setInterval(show, TYPING_EVERY_MS);
  }, afterMs);
  return () => {
    clearTimeout(first);
    if (every) clearInterval(every);
  };
}
