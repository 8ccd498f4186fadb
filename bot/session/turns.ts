// The turn script: agent speaks -> stored -> shown -> person replies -> ... -> answer -> evaluation -> result
// -> rating. Every turn is stored before it is shown, and each step is safe to repeat after a restart.
import type { Agent } from '../../tasks/agent.ts';
import {
  agentMessageView,
  buildDialogue,
  checkAgentMessage,
  checkHumanMessage,
  endReasonOf,
  MessageTooLongError,
  parseAgentMessage,
  sanitizeText,
  type DialogueTurn,
  type ParsedAgentMessage,
} from '../../tasks/protocol.ts';
import type { Session, Task, Turn } from '../../prisma/generated/client.ts';
import { UniqueViolationError, toDatabaseError } from '../../prisma/errors.ts';
import { findParticipant } from '../../prisma/participant-store.ts';
import {
  appendAgentTurn,
  appendHumanTurn,
  endSession,
  markRatingAsked,
  markResultShown,
  markTurnShown,
  outcomeOf,
  recordComment,
  recordEvaluation,
  recordRating,
} from '../../prisma/session-store.ts';
import { taskContent } from '../../prisma/task-store.ts';
import { goldAgent } from '../gold.ts';
import { messageLimitRefusal } from '../limits.ts';
import type { AgentCache } from './agents.ts';
import { dialogueTurns, type EngineContext } from './context.ts';
import { ScoringClosedError, type ScoringState } from './scoring.ts';
import type { EvaluationOutcome } from '../evaluator.ts';
import { TurnRejectedError, type AgentStep, type EvaluatedSession, type Hooks, type Person, type SessionState, type SessionView } from './types.ts';

export class TurnScript {
  /** External ids of human messages being stored now: a redelivery meanwhile is a duplicate. */
  private readonly inFlightMessages = new Set<string>();

  constructor(
    private readonly ctx: EngineContext,
    private readonly agents: AgentCache,
  ) {}

  /**
   * Does what the session owes next, showing each step through `view`: the agent's message (generated and
   * stored, or stored earlier but never shown), then, once the agent has answered, the evaluation, the result
   * and the rating prompt. Returns whose move it is. Safe to call again at any time (after a restart, a
   * duplicate event): what is stored and shown is never done twice.
   */
  advance(sessionId: string, view: SessionView, hooks?: Hooks): Promise<SessionState> {
    return this.ctx.attend(sessionId, () => this.advanceAttended(sessionId, view, hooks));
  }

  private async advanceAttended(sessionId: string, view: SessionView, hooks?: Hooks): Promise<SessionState> {
    for (;;) {
      const s = await this.ctx.load(sessionId, hooks);
      if (!s) return 'ended';
      const last = s.turns.filter((t) => t.role !== 'system').at(-1);
      if (last?.role === 'agent' && last.externalMessageId === null) {
        // Stored but never shown (a restart between the two): show it now.
        await this.present(await this.stepOf(last.id), view, hooks);
        continue;
      }
      if (s.status === 'answered') {
        await this.finish(s, view, hooks);
        return 'awaiting-rating';
      }
      if (s.status !== 'active') return 'ended';
      if (last?.role === 'agent') return 'awaiting-human';
      await view.typing?.().catch(() => {});
      const typing = view.typing ? setInterval(() => void view.typing!().catch(() => {}), 8_000) : null;
      let step: AgentStep | null;
      try {
        step = await this.agentStep(sessionId, hooks);
      } catch (err) {
        if (err instanceof TurnRejectedError) {
          await view.notice(err.message);
          return 'ended';
        }
        throw err;
      } finally {
        if (typing) clearInterval(typing);
      }
      // The engine closed while the agent wrote: nothing more here (the next start resumes it). Otherwise the
      // session changed under us (stopped, answered elsewhere): look again.
      if (!step) {
        if (this.ctx.closing) return 'ended';
        continue;
      }
      await this.present(step, view, hooks);
    }
  }

  /** Stores the person's reply, then lets the agent answer it (see advance). Null for a duplicate message. */
  receive(sessionId: string, text: string, externalMessageId: string | null, view: SessionView, hooks?: Hooks): Promise<SessionState | null> {
    // Attended from the store on: the stored message owes the agent's answer, which this call gives, not the sweep.
    return this.ctx.attend(sessionId, async () => {
      const r = await this.humanTurn(sessionId, text, externalMessageId, hooks);
      if (r.duplicate) return null;
      return this.advance(sessionId, view, hooks);
    });
  }

  private async present(step: AgentStep, view: SessionView, hooks?: Hooks): Promise<void> {
    const shownAs = await view.showAgentMessage(step);
    await this.markShown(step.turnId, shownAs, hooks);
  }

  /**
   * Shows what an answered session still owes: the result, then the rating prompt, each recorded once shown
   * (a restart between a post and its record re-posts it; the view makes that post idempotent).
   */
  private async finish(s: Session, view: SessionView, hooks?: Hooks): Promise<void> {
    const { ctx } = this;
    const sessionId = s.id;
    if (!s.resultShownAt) {
      await view.typing?.().catch(() => {});
      let result: EvaluatedSession | null = null;
      try {
        result = await this.evaluate(sessionId, hooks, (state) => void view.showScoring?.(sessionId, state).catch(() => {}));
      } catch (err) {
        // The engine is stopping with this answer still waiting for a place: the next start scores it.
        if (err instanceof ScoringClosedError) return;
        // The answer is stored; a later advance() (or the next start) scores it. The rating need not wait.
        ctx.deps.log?.error({ err: (err as Error).message, session: sessionId }, 'evaluation failed');
        ctx.deps.observer?.evaluationFailed?.();
        // Told once (the rating prompt follows it); a later try (the sweep, a restart) says nothing until it scores.
        if (!s.ratingAskedAt) await view.showResult({ sessionId, error: 'evaluation failed' });
      }
      if (result) {
        await view.showResult(result);
        await ctx.retry(() => markResultShown(ctx.prisma, sessionId), hooks);
      }
    }
    if (!s.ratingAskedAt) {
      await view.askRating(sessionId);
      await ctx.retry(() => markRatingAsked(ctx.prisma, sessionId), hooks);
    }
  }

  /**
   * The agent's next message: generated, checked, stored, then returned for showing. Returns null when the
   * agent owes nothing (session over, or its message is already stored and waits for the person).
   */
  agentStep(sessionId: string, hooks?: Hooks): Promise<AgentStep | null> {
    return this.ctx.sessionLock.run(sessionId, () => this.agentStepLocked(sessionId, hooks));
  }

  private async agentStepLocked(sessionId: string, hooks?: Hooks): Promise<AgentStep | null> {
    const { ctx } = this;
    if (ctx.closing) return null; // a closed engine sends no more requests
    const s = await ctx.load(sessionId, hooks);
    if (!s || s.status !== 'active') return null;
    const turns = dialogueTurns(s.turns);
    if (turns.length > 0 && turns.at(-1)!.role === 'agent') return null;
    const agentTurnIndex = turns.filter((t) => t.role === 'agent').length;
    const maxTurns = ctx.options.maxTurns;
    const policy = s.policyVersion ?? ctx.deps.policies.deployed;
    if (!policy && !s.goldSourceId) throw new Error(`session ${sessionId} has no policy and none is deployed`);
    const gold = s.goldSourceId ? await ctx.retry(() => goldAgent(ctx.prisma, s.goldSourceId!), hooks) : null;
    // Loaded within the wait for its reply: a first load (the local server's, after a restart) can take minutes.
    const agent = gold ? async () => gold : () => this.agents.agentFor(policy!);
    const content = taskContent(s.task);
    const dialogue = buildDialogue(content, turns, { maxTurns });

    let text: string | null = null;
    let reply: Awaited<ReturnType<Agent['reply']>> | null = null;
    let modelMs = 0;
    const attempts = 1 + (ctx.options.agentRetries ?? 2);
    let failure: string | null = null;
    for (let attempt = 0; attempt < attempts && text === null && failure === null; attempt++) {
      const t0 = performance.now();
      try {
        const r = await this.agents.replyWhenAvailable(agent, dialogue, sessionId, hooks);
        if (r === null) return null; // the session ended (or the engine closed) while the agent was away
        reply = r;
      } catch (err) {
        // A model that cannot answer (its context is full, its worker died) will not do better on a retry.
        failure = (err as Error).message;
        ctx.deps.log?.error({ err: failure, session: sessionId }, 'the agent failed');
        break;
      }
      modelMs += performance.now() - t0;
      // Postgres text cannot hold NUL, which a byte-level model can emit: stored (and shown) as U+FFFD.
      reply = { ...reply, text: sanitizeText(reply.text) };
      try {
        text = checkAgentMessage(reply.text, content.kind);
      } catch (err) {
        if (!(err instanceof MessageTooLongError)) throw err;
        ctx.deps.log?.warn({ session: sessionId, length: reply.text.length }, 'agent message over the cap; generating again');
      }
    }
    if (text === null || reply === null) {
      const why = failure ? `agent-error: ${failure}` : 'agent-error: message over the length cap';
      ctx.deps.log?.warn({ session: sessionId, why }, 'session abandoned: the agent wrote no usable message');
      await ctx.retry(() => endSession(ctx.prisma, sessionId, 'abandoned', why), hooks);
      throw new TurnRejectedError('The agent failed to write a usable message, so this session had to end. Sorry! You can start a new one.');
    }
    const parsed = parseAgentMessage(text, { kind: content.kind, turnIndex: agentTurnIndex, maxTurns });
    const done = reply;
    const stored = {
      content: text,
      rawOutput: done.text,
      latencyMs: Math.round(modelMs),
      promptTokens: done.promptTokens ?? null,
      completionTokens: done.completionTokens ?? null,
      provenance: done.provenance ?? null,
    };
    const answered = parsed.type === 'answer' ? { answer: parsed.answer ?? '', endReason: endReasonOf(parsed) } : undefined;
    const turn = await this.storeUnlessGone(sessionId, () => ctx.retry(() => appendAgentTurn(ctx.prisma, sessionId, stored, answered), hooks));
    if (!turn) return null; // the session was deleted while the agent wrote (/privacy delete): nothing to show
    ctx.deps.observer?.agentTurn?.(modelMs);
    return this.toStep(s, turn, parsed, agentTurnIndex, modelMs);
  }

  /** Runs a write for a session; null (instead of the database's error) when the session no longer exists. */
  private async storeUnlessGone<T>(sessionId: string, write: () => Promise<T>): Promise<T | null> {
    try {
      return await write();
    } catch (err) {
      const gone = await this.ctx.prisma.session.findUnique({ where: { id: sessionId }, select: { id: true } }).then((x) => !x, () => false);
      if (gone) return null;
      throw err;
    }
  }

  private async toStep(s: Session & { task: Task }, turn: Turn, parsed: ParsedAgentMessage, agentTurnIndex: number, modelMs: number): Promise<AgentStep> {
    const { ctx } = this;
    const view = agentMessageView(turn.content, parsed, s.task.kind);
    const step: AgentStep = {
      sessionId: s.id,
      turnId: turn.id,
      index: turn.index,
      agentTurn: agentTurnIndex + 1,
      maxTurns: ctx.options.maxTurns,
      parsed,
      view,
      answered: parsed.type === 'answer',
      modelMs,
    };
    if (view.type === 'screenshot' && ctx.deps.render) {
      try {
        step.png = await ctx.deps.render(view.html);
      } catch (err) {
        ctx.deps.log?.warn({ err: (err as Error).message, session: s.id }, 'cannot render the agent page');
      }
    }
    return step;
  }

  /** Rebuilds what to show for an agent turn already stored (after a restart, or to show it again). */
  async stepOf(turnId: string): Promise<AgentStep> {
    const { ctx } = this;
    const turn = await ctx.retry(() => ctx.prisma.turn.findUniqueOrThrow({ where: { id: turnId } }));
    const s = await ctx.load(turn.sessionId);
    if (!s) throw new Error(`no session for turn ${turnId}`);
    const agentTurnIndex = s.turns.filter((t) => t.role === 'agent' && t.index < turn.index).length;
    const parsed = parseAgentMessage(turn.content, { kind: s.task.kind, turnIndex: agentTurnIndex, maxTurns: ctx.options.maxTurns });
    return this.toStep(s, turn, parsed, agentTurnIndex, 0);
  }

  /** Records the channel's id of the message that showed an agent turn (it has reached the person). */
  async markShown(turnId: string, externalMessageId: string, hooks?: Hooks): Promise<void> {
    await this.ctx.retry(() => markTurnShown(this.ctx.prisma, turnId, externalMessageId), hooks);
  }

  /**
   * Stores the person's message. Returns `duplicate: true` (and does nothing) for a message already stored or
   * being handled. Throws TurnRejectedError when it cannot be taken (the message says why).
   */
  async humanTurn(sessionId: string, text: string, externalMessageId: string | null, hooks?: Hooks): Promise<{ duplicate: boolean; turnId?: string }> {
    const { ctx } = this;
    if (externalMessageId) {
      if (this.inFlightMessages.has(externalMessageId)) return { duplicate: true };
      const seen = await ctx.retry(() => ctx.prisma.turn.findUnique({ where: { externalMessageId }, select: { id: true } }), hooks);
      if (seen) return { duplicate: true };
    }
    if (ctx.isBusy(sessionId)) throw new TurnRejectedError('The agent is still writing. Please wait for its message, then answer.');
    if (externalMessageId) this.inFlightMessages.add(externalMessageId);
    try {
      return await ctx.sessionLock.run(sessionId, async () => {
        const s = await ctx.load(sessionId, hooks);
        if (!s) throw new TurnRejectedError('This session no longer exists.');
        if (s.status !== 'active') throw new TurnRejectedError(`This session has ended (${s.endReason ?? s.status}). Start a new one with /task start.`);
        const last = dialogueTurns(s.turns).at(-1);
        if (!last || last.role !== 'agent') throw new TurnRejectedError('Please wait for the agent\'s message, then answer.');
        let content: string;
        try {
          content = checkHumanMessage(sanitizeText(text), s.task.kind);
        } catch (err) {
          throw new TurnRejectedError((err as Error).message);
        }
        const limits = ctx.options.limits;
        if (limits) {
          const refusal = await ctx.retry(() => messageLimitRefusal(ctx.prisma, s.participantId, content.length, limits), hooks);
          if (refusal) throw new TurnRejectedError(refusal);
        }
        try {
          const turn = await this.storeUnlessGone(sessionId, () => ctx.retry(() => appendHumanTurn(ctx.prisma, sessionId, { content, externalMessageId }), hooks));
          if (!turn) throw new TurnRejectedError('This session no longer exists.');
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

  /**
   * Scores the answer of an answered session (once; later calls return the stored evaluation), in the engine's
   * bounded scoring pool (scoring.ts): `onState` hears whether it waits, and how many answers are ahead, or is
   * being scored. Stored inside the pool's job, so an engine that closes waits for every score it started.
   */
  evaluate(sessionId: string, hooks?: Hooks, onState?: (s: ScoringState) => void): Promise<EvaluatedSession> {
    const { ctx } = this;
    return ctx.sessionLock.run(`eval:${sessionId}`, async () => {
      const s = await ctx.retry(() => ctx.prisma.session.findUniqueOrThrow({ where: { id: sessionId }, include: { task: true, evaluation: true } }), hooks);
      if (s.status !== 'answered') throw new TurnRejectedError('This session has no answer to evaluate.');
      const answer = s.answer ?? '';
      if (s.evaluation) return { sessionId, kind: s.task.kind, answer, outcome: outcomeOf(s.evaluation) };
      const outcome = await ctx.scoring.run(async () => {
        const scored = await ctx.deps.evaluate(taskContent(s.task), answer);
        return this.storeEvaluation(sessionId, scored, hooks);
      }, onState);
      return { sessionId, kind: s.task.kind, answer, outcome };
    });
  }

  /** Stores a score; when another process stored this answer's first (a second bot on the same database), that one stands. */
  private async storeEvaluation(sessionId: string, outcome: EvaluationOutcome, hooks?: Hooks): Promise<EvaluationOutcome> {
    const { ctx } = this;
    try {
      await ctx.retry(() => recordEvaluation(ctx.prisma, sessionId, outcome, ctx.options.ratingWeight), hooks);
    } catch (err) {
      const e = toDatabaseError(err);
      if (!(e instanceof UniqueViolationError)) throw e;
      const stored = await ctx.retry(() => ctx.prisma.evaluation.findUniqueOrThrow({ where: { sessionId } }), hooks);
      ctx.deps.log?.warn({ session: sessionId }, 'this answer was scored elsewhere meanwhile: keeping that score');
      return outcomeOf(stored);
    }
    ctx.deps.log?.info({ session: sessionId, score: outcome.score, success: outcome.success }, 'session evaluated');
    return outcome;
  }

  /** Stores the person's 1-5 rating of their answered session (a second rating replaces the first). */
  async rate(sessionId: string, rater: Person, value: number, hooks?: Hooks): Promise<void> {
    const { ctx } = this;
    if (!Number.isInteger(value) || value < 1 || value > 5) throw new TurnRejectedError('A rating is a whole number from 1 to 5.');
    await ctx.retry(async () => {
      const s = await ctx.prisma.session.findUnique({ where: { id: sessionId }, include: { participant: true } });
      if (!s) throw new TurnRejectedError('This session no longer exists.');
      if (s.participant.discordUserId !== rater.externalId) throw new TurnRejectedError('Only the person who took part in this session can rate it.');
      if (s.status !== 'answered') throw new TurnRejectedError('Only a finished session can be rated.');
      await recordRating(ctx.prisma, sessionId, s.participantId, value, ctx.options.ratingWeight);
    }, hooks);
  }

  async comment(sessionId: string, rater: Person, comment: string, hooks?: Hooks): Promise<void> {
    const { ctx } = this;
    const text = comment.trim();
    if (text.length > 1000) throw new TurnRejectedError(`Your comment is ${text.length} characters long; the limit is 1000.`);
    await ctx.retry(async () => {
      const p = await findParticipant(ctx.prisma, rater.externalId);
      if (!p) throw new TurnRejectedError('Please rate the session first.');
      if (!(await recordComment(ctx.prisma, sessionId, p.id, text))) throw new TurnRejectedError('Please rate the session with the buttons first, then add a comment.');
    }, hooks);
  }

  /** Ends the person's active session at their request; returns it, or null when they had none. */
  stop(externalId: string, hooks?: Hooks): Promise<Session | null> {
    const { ctx } = this;
    return ctx.personLock.run(externalId, async () => {
      const p = await ctx.retry(() => findParticipant(ctx.prisma, externalId), hooks);
      if (!p) return null;
      const s = await ctx.retry(() => ctx.prisma.session.findFirst({ where: { participantId: p.id, status: 'active' } }), hooks);
      if (!s) return null;
      const end = async () => {
        await ctx.retry(() => endSession(ctx.prisma, s.id, 'abandoned', 'stopped'), hooks);
        return ctx.retry(() => ctx.prisma.session.findUniqueOrThrow({ where: { id: s.id } }), hooks);
      };
      // An agent waiting for its server holds the session's lock until the session ends: end it without the
      // lock (the wait sees it and stores nothing). Otherwise wait for a turn being written to be stored.
      return this.agents.waitingForAgent(s.id) ? end() : ctx.sessionLock.run(s.id, end);
    });
  }

  /** The dialogue of a session so far, for showing it again (system notices left out). */
  async transcript(sessionId: string, hooks?: Hooks): Promise<DialogueTurn[]> {
    const turns = await this.ctx.retry(() => this.ctx.prisma.turn.findMany({ where: { sessionId }, orderBy: { index: 'asc' } }), hooks);
    return dialogueTurns(turns);
  }
}
