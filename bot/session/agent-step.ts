// The agent's turn: its message generated (the agent loaded within the wait for it), checked against the
// protocol, stored, and made ready to show; and the same rebuilt for a turn stored earlier (after a restart).
import type { Agent } from '../../tasks/agent.ts';
import {
  agentMessageView,
  buildDialogue,
  checkAgentMessage,
  endReasonOf,
  MessageTooLongError,
  parseAgentMessage,
  sanitizeText,
  type ParsedAgentMessage,
} from '../../tasks/protocol.ts';
import type { Session, Task, Turn } from '../../prisma/generated/client.ts';
import { appendAgentTurn } from '../../prisma/session-store.ts';
import { taskContent } from '../../prisma/task-store.ts';
import { goldAgent } from '../gold.ts';
import type { AgentCache } from './agents.ts';
import { dialogueTurns } from '../../prisma/cohorts.ts';
import type { EngineContext, SessionWithTurns } from './context.ts';
import { TurnRejectedError, type AgentStep, type Hooks } from './types.ts';

export class AgentSteps {
  constructor(
    private readonly ctx: EngineContext,
    private readonly agents: AgentCache,
  ) {}

  /**
   * The agent's next message: generated, checked, stored, then returned for showing. Returns null when the
   * agent owes nothing (session over, or its message is already stored and waits for the person).
   */
  agentStep(sessionId: string, hooks?: Hooks): Promise<AgentStep | null> {
    return this.ctx.locked(sessionId, () => this.agentStepLocked(sessionId, hooks));
  }

  private async agentStepLocked(sessionId: string, hooks?: Hooks): Promise<AgentStep | null> {
    const { ctx } = this;
    if (ctx.closing) return null; // a closed engine sends no more requests
    // The person's reply just stored under this lock is in memory as written (session-cache.ts).
    const s = await ctx.load(sessionId, hooks);
    if (!s || s.status !== 'active') return null;
    const turns = dialogueTurns(s.turns);
    if (turns.length > 0 && turns.at(-1)!.role === 'agent') return null;
    const agentTurnIndex = turns.filter((t) => t.role === 'agent').length;
    const maxTurns = ctx.options.maxTurns;
    const deployed = ctx.deps.policies.deployed;
    if (!s.policyVersionId && !deployed && !s.goldSourceId)
      throw new Error(`session ${sessionId} has no policy and none is deployed`);
    const gold = s.goldSourceId ? await ctx.retry(() => goldAgent(ctx.prisma, s.goldSourceId!), hooks) : null;
    // Loaded within the wait for its reply: a first load (the local server's, after a restart) can take minutes.
    const version = s.policyVersionId;
    const agent = gold
      ? async () => gold
      : version
        ? () => this.agents.agentOf(version, hooks)
        : () => this.agents.agentFor(deployed!);
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
        ctx.deps.log?.warn(
          { session: sessionId, length: reply.text.length },
          'agent message over the cap; generating again',
        );
      }
    }
    if (text === null || reply === null) {
      const why = failure ? `agent-error: ${failure}` : 'agent-error: message over the length cap';
      ctx.deps.log?.warn({ session: sessionId, why }, 'session abandoned: the agent wrote no usable message');
      await ctx.endSession(sessionId, 'abandoned', why, hooks);
      throw new TurnRejectedError(
        'The agent failed to write a usable message, so this session had to end. Sorry! You can start a new one.',
      );
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
    const answered =
      parsed.type === 'answer' ? { answer: parsed.answer ?? '', endReason: endReasonOf(parsed) } : undefined;
    const turn = await ctx.appendTurn(sessionId, () => appendAgentTurn(ctx.prisma, sessionId, stored, answered), hooks);
    // The session was deleted or ended while the agent wrote (/privacy delete, a moderator): nothing to show.
    if (!turn) return null;
    ctx.sessions.appendTurn(sessionId, turn, {
      lastActivityAt: turn.createdAt,
      ...(answered
        ? { status: 'answered', answer: answered.answer, endedAt: turn.createdAt, endReason: answered.endReason }
        : {}),
    });
    ctx.deps.observer?.agentTurn?.(modelMs);
    return this.toStep(s, turn, parsed, agentTurnIndex, modelMs);
  }

  private async toStep(
    s: Session & { task: Task },
    turn: Turn,
    parsed: ParsedAgentMessage,
    agentTurnIndex: number,
    modelMs: number,
  ): Promise<AgentStep> {
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
  async stepOf(turnId: string, loaded?: SessionWithTurns): Promise<AgentStep> {
    const { ctx } = this;
    const s = loaded?.turns.some((t) => t.id === turnId)
      ? loaded
      : await ctx
          .retry(() => ctx.prisma.turn.findUniqueOrThrow({ where: { id: turnId }, select: { sessionId: true } }))
          .then((t) => ctx.load(t.sessionId));
    if (!s) throw new Error(`no session for turn ${turnId}`);
    const turn = s.turns.find((t) => t.id === turnId)!;
    const agentTurnIndex = s.turns.filter((t) => t.role === 'agent' && t.index < turn.index).length;
    const parsed = parseAgentMessage(turn.content, {
      kind: s.task.kind,
      turnIndex: agentTurnIndex,
      maxTurns: ctx.options.maxTurns,
    });
    return this.toStep(s, turn, parsed, agentTurnIndex, 0);
  }
}
