// The session engine: everything about a collaboration session that does not depend on where it happens.
// Discord, the console and the benchmark drive the same engine; they only decide how things are shown.
//
// Rules kept here:
// - a person must have accepted the consent text, must not be banned, and collection must not be paused;
// - one active session per person; tasks assigned by balance (see assign.ts);
// - turns follow tasks/protocol.ts (agent first, alternate, at most maxTurns agent turns, answer marker, caps);
// - every turn is stored BEFORE it is shown (the caller shows what a method returned, after it returned);
// - an agent turn records the channel's message id once shown, so a restart re-shows what never got out;
// - a redelivered human message (same external id) is stored once and answered once;
// - when the database is unreachable, each write is retried with back-off (the caller is told, to tell the
//   person to wait), so nothing the person sent is lost.
import type { Agent } from '../tasks/agent.ts';
import type { TaskContent, TaskKind } from '../tasks/model.ts';
import {
  agentMessageView,
  buildDialogue,
  checkAgentMessage,
  checkHumanMessage,
  collaboratorView,
  MessageTooLongError,
  parseAgentMessage,
  sanitizeText,
  type AgentMessageView,
  type CollaboratorView,
  type DialogueTurn,
  type ParsedAgentMessage,
} from '../tasks/protocol.ts';
import type { Database } from '../prisma/db.ts';
import type { Participant, PolicyVersion, Prisma, Session, Task, Turn } from '../prisma/generated/client.ts';
import { UniqueViolationError, toDatabaseError } from '../prisma/errors.ts';
import type { Logger } from '../bin/log.ts';
import { neededKind, NoTaskAvailableError, pickTask } from './assign.ts';
import { findParticipant, hasConsent } from './consent.ts';
import type { PolicyWatcher } from './deploy-watch.ts';
import type { Evaluate, EvaluationOutcome, RenderPage } from './evaluator.ts';
import { KeyedMutex } from './locks.ts';
import { isPaused } from './moderation.ts';
import { withDbRetry } from './retry.ts';

export type Channel = 'discord' | 'console' | 'simulated';

export interface EngineOptions {
  channel: Channel;
  /** Agent turns per session (ColBench: 10). */
  maxTurns: number;
  /** An active session idle this long expires. */
  idleMinutes: number;
  /** Weight of the rating in the reward (0: evaluation score only). */
  ratingWeight: number;
  /** Retries of an agent message refused by the protocol (over the length cap) before the session ends. */
  agentRetries?: number;
  /** How long a database write keeps being retried during an outage (default 15 minutes). */
  dbRetryMs?: number;
}

export interface EngineDeps {
  db: Database;
  policies: PolicyWatcher;
  /** Loads the agent of a policy version (called once per version; the engine caches it). */
  loadAgent: (policy: PolicyVersion) => Promise<Agent>;
  evaluate: Evaluate;
  /** Renders frontend pages (target screenshots and drafts). Without it, frontend sessions are refused. */
  render?: RenderPage;
  log?: Logger;
}

export type RefusalReason = 'no-consent' | 'banned' | 'paused' | 'active-session' | 'no-policy' | 'no-task' | 'no-renderer';

/** The engine will not do what was asked; `message` is meant for the person. */
export class RefusedError extends Error {
  override name = 'RefusedError';
  constructor(
    readonly reason: RefusalReason,
    message: string,
    readonly sessionId?: string,
  ) {
    super(message);
  }
}

/** A message that cannot be taken now (not their turn, session over, too long, empty); `message` is for the person. */
export class TurnRejectedError extends Error {
  override name = 'TurnRejectedError';
}

export interface Person {
  /** Discord user id, or `console:<name>`. */
  externalId: string;
  displayName: string | null;
}

export interface Hooks {
  /** The database is unreachable; the operation is being retried. Called at most once per call. */
  onDbWaiting?: () => void | Promise<void>;
  onDbRecovered?: () => void | Promise<void>;
}

export interface StartedSession {
  sessionId: string;
  taskId: string;
  kind: TaskKind;
  description: string;
  policyName: string;
  view: CollaboratorView;
  /** Frontend: the screenshot of the target page (shown to the person only). */
  targetPng?: Buffer;
}

export interface AgentStep {
  sessionId: string;
  turnId: string;
  /** 0-based index of the turn in the session (agent and human turns together). */
  index: number;
  /** 1-based number of this agent message, and how many the agent may write. */
  agentTurn: number;
  maxTurns: number;
  parsed: ParsedAgentMessage;
  view: AgentMessageView;
  /** Screenshot of the draft or answer page (frontend). */
  png?: Buffer;
  /** True when this message ended the session with an answer. */
  answered: boolean;
  modelMs: number;
}

export interface EvaluatedSession {
  sessionId: string;
  kind: TaskKind;
  answer: string;
  outcome: EvaluationOutcome;
}

export type PendingWork =
  | { kind: 'agent'; session: Session }
  | { kind: 'show'; session: Session; turn: Turn }
  | { kind: 'evaluate'; session: Session };

type SessionWithAll = Session & { task: Task; turns: Turn[]; policyVersion: PolicyVersion | null };

export function taskContent(t: Task): TaskContent {
  if (t.kind === 'backend') {
    return { kind: 'backend', description: t.description, reference: t.hiddenReference, testCases: Array.isArray(t.testCases) ? (t.testCases as string[]) : [] };
  }
  return { kind: 'frontend', description: t.description, reference: t.hiddenReference };
}

/** The dialogue turns of a session as the protocol sees them (system notices left out). */
export function dialogueTurns(turns: readonly Turn[]): DialogueTurn[] {
  return turns
    .filter((t) => t.role !== 'system')
    .sort((a, b) => a.index - b.index)
    .map((t) => ({ role: t.role as 'agent' | 'human', content: t.content }));
}

export class SessionEngine {
  private readonly sessionLock = new KeyedMutex();
  private readonly personLock = new KeyedMutex();
  private readonly agents = new Map<string, Promise<Agent>>();
  private readonly inFlightMessages = new Set<string>();
  private expiryTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly deps: EngineDeps,
    readonly options: EngineOptions,
  ) {}

  get prisma() {
    return this.deps.db.prisma;
  }

  private retry<T>(fn: () => Promise<T>, hooks?: Hooks): Promise<T> {
    return withDbRetry(fn, {
      giveUpAfterMs: this.options.dbRetryMs ?? 15 * 60_000,
      onWaiting: (err) => {
        this.deps.log?.warn({ err: (err as Error).message }, 'database unreachable; retrying');
        return hooks?.onDbWaiting?.();
      },
      onRecovered: () => hooks?.onDbRecovered?.(),
    });
  }

  // ------------------------------------------------------------------------------------------ people

  async participant(externalId: string, hooks?: Hooks): Promise<Participant | null> {
    return this.retry(() => findParticipant(this.prisma, externalId), hooks);
  }

  // ------------------------------------------------------------------------------------------ starting

  /** Checks everything and creates the session; the caller shows the hidden information, then calls agentStep. */
  async start(person: Person, kindWanted: TaskKind | null, where: { guildId?: string; channelId?: string } = {}, hooks?: Hooks): Promise<StartedSession> {
    return this.personLock.run(person.externalId, async () => {
      const p = await this.retry(() => findParticipant(this.prisma, person.externalId), hooks);
      if (p?.banned) throw new RefusedError('banned', 'You are not allowed to take part in sessions.');
      if (!hasConsent(p)) throw new RefusedError('no-consent', 'Please accept the data-collection notice first.');
      const participant = p!;
      if (await this.retry(() => isPaused(this.prisma), hooks)) {
        throw new RefusedError('paused', 'Collection is paused by the moderators right now. Please try again later.');
      }
      const active = await this.retry(() => this.prisma.session.findFirst({ where: { participantId: participant.id, status: 'active' } }), hooks);
      if (active) {
        throw new RefusedError('active-session', 'You already have a session running. Finish it, or end it with /task stop.', active.id);
      }
      const policy = this.deps.policies.deployed ?? (await this.deps.policies.refresh());
      if (!policy) throw new RefusedError('no-policy', 'No agent is deployed yet. Please try again later.');
      const kind = kindWanted ?? (await this.retry(() => neededKind(this.prisma), hooks));
      if (kind === 'frontend' && !this.deps.render) {
        throw new RefusedError('no-renderer', 'Frontend sessions need the page renderer, which is not available here.');
      }
      let taskId: string;
      try {
        taskId = await this.retry(() => pickTask(this.prisma, participant.id, kind), hooks);
      } catch (err) {
        if (err instanceof NoTaskAvailableError) throw new RefusedError('no-task', err.message);
        throw err;
      }
      const session = await this.retry(
        () =>
          this.prisma.session.create({
            data: {
              taskId,
              participantId: participant.id,
              policyVersionId: policy.id,
              channel: this.options.channel,
              simulated: this.options.channel === 'simulated',
              guildId: where.guildId ?? null,
              channelId: where.channelId ?? null,
            },
            include: { task: true },
          }),
        hooks,
      );
      const content = taskContent(session.task);
      const view = collaboratorView(content);
      const started: StartedSession = {
        sessionId: session.id,
        taskId,
        kind,
        description: content.description,
        policyName: policy.name,
        view,
      };
      if (view.kind === 'frontend') started.targetPng = await this.deps.render!(view.targetHtml);
      this.deps.log?.info({ session: session.id, kind, task: taskId, policy: policy.name }, 'session started');
      return started;
    });
  }

  /** Records where the session is shown (a Discord thread). */
  async attachThread(sessionId: string, threadId: string, hooks?: Hooks): Promise<void> {
    await this.retry(() => this.prisma.session.update({ where: { id: sessionId }, data: { threadId } }), hooks);
  }

  /** Re-shows the hidden information of a session (e.g. on /task status). */
  async hiddenInfo(sessionId: string): Promise<{ view: CollaboratorView; targetPng?: Buffer }> {
    const s = await this.retry(() => this.prisma.session.findUniqueOrThrow({ where: { id: sessionId }, include: { task: true } }));
    const view = collaboratorView(taskContent(s.task));
    if (view.kind === 'frontend' && this.deps.render) return { view, targetPng: await this.deps.render(view.targetHtml) };
    return { view };
  }

  // ------------------------------------------------------------------------------------------ turns

  private async load(sessionId: string, hooks?: Hooks): Promise<SessionWithAll | null> {
    return this.retry(
      () => this.prisma.session.findUnique({ where: { id: sessionId }, include: { task: true, turns: { orderBy: { index: 'asc' } }, policyVersion: true } }),
      hooks,
    );
  }

  private agentFor(policy: PolicyVersion): Promise<Agent> {
    let a = this.agents.get(policy.id);
    if (!a) {
      a = this.deps.loadAgent(policy);
      a.catch(() => this.agents.delete(policy.id));
      this.agents.set(policy.id, a);
    }
    return a;
  }

  /** Is the agent working on this session right now (the person must wait for its message)? */
  isBusy(sessionId: string): boolean {
    return this.sessionLock.isBusy(sessionId);
  }

  /**
   * The agent's next message: generated, checked, stored, then returned for showing. Returns null when the
   * agent owes nothing (session over, or its message is already stored and waits for the person).
   */
  async agentStep(sessionId: string, hooks?: Hooks): Promise<AgentStep | null> {
    return this.sessionLock.run(sessionId, () => this.agentStepLocked(sessionId, hooks));
  }

  private async agentStepLocked(sessionId: string, hooks?: Hooks): Promise<AgentStep | null> {
    const s = await this.load(sessionId, hooks);
    if (!s || s.status !== 'active') return null;
    const turns = dialogueTurns(s.turns);
    if (turns.length > 0 && turns.at(-1)!.role === 'agent') return null;
    const agentTurnIndex = turns.filter((t) => t.role === 'agent').length;
    const maxTurns = this.options.maxTurns;
    const policy = s.policyVersion ?? this.deps.policies.deployed;
    if (!policy) throw new Error(`session ${sessionId} has no policy and none is deployed`);
    const agent = await this.agentFor(policy);
    const content = taskContent(s.task);
    const dialogue = buildDialogue(content, turns, { maxTurns });

    let text: string | null = null;
    let reply: Awaited<ReturnType<Agent['reply']>> | null = null;
    let modelMs = 0;
    const attempts = 1 + (this.options.agentRetries ?? 2);
    let failure: string | null = null;
    for (let attempt = 0; attempt < attempts && text === null && failure === null; attempt++) {
      const t0 = performance.now();
      try {
        reply = await agent.reply(dialogue);
      } catch (err) {
        // A model that cannot answer (its context is full, its worker died) will not do better on a retry.
        failure = (err as Error).message;
        this.deps.log?.error({ err: failure, session: sessionId }, 'the agent failed');
        break;
      }
      modelMs += performance.now() - t0;
      // Postgres text cannot hold NUL, which a byte-level model can emit: stored (and shown) as U+FFFD.
      reply = { ...reply, text: sanitizeText(reply.text) };
      try {
        text = checkAgentMessage(reply.text, content.kind);
      } catch (err) {
        if (!(err instanceof MessageTooLongError)) throw err;
        this.deps.log?.warn({ session: sessionId, length: reply.text.length }, 'agent message over the cap; generating again');
      }
    }
    if (text === null || reply === null) {
      await this.retry(
        () =>
          this.prisma.session.updateMany({
            where: { id: sessionId, status: 'active' },
            data: { status: 'abandoned', endedAt: new Date(), endReason: failure ? `agent-error: ${failure}`.slice(0, 500) : 'agent-error: message over the length cap' },
          }),
        hooks,
      );
      throw new TurnRejectedError('The agent failed to write a usable message, so this session had to end. Sorry! You can start a new one.');
    }
    const parsed = parseAgentMessage(text, { kind: content.kind, turnIndex: agentTurnIndex, maxTurns });
    const answered = parsed.type === 'answer';
    const index = s.turns.length === 0 ? 0 : Math.max(...s.turns.map((t) => t.index)) + 1;
    const now = new Date();
    const data: Prisma.TurnUncheckedCreateInput = {
      sessionId,
      index,
      role: 'agent',
      content: text,
      rawOutput: reply.text,
      latencyMs: Math.round(modelMs),
      ...(reply.promptTokens !== undefined ? { promptTokens: reply.promptTokens } : {}),
      ...(reply.completionTokens !== undefined ? { completionTokens: reply.completionTokens } : {}),
    };
    const turn = await this.retry(
      () =>
        this.prisma.$transaction(async (tx) => {
          const t = await tx.turn.create({ data });
          await tx.session.update({
            where: { id: sessionId },
            data: {
              turnCount: { increment: 1 },
              lastActivityAt: now,
              ...(answered ? { status: 'answered', answer: parsed.answer ?? '', endedAt: now, endReason: parsed.fallback ? 'turn-limit' : 'answered' } : {}),
            },
          });
          return t;
        }),
      hooks,
    );
    return this.toStep(s, turn, parsed, agentTurnIndex, modelMs);
  }

  private async toStep(s: Session & { task: Task }, turn: Turn, parsed: ParsedAgentMessage, agentTurnIndex: number, modelMs: number): Promise<AgentStep> {
    const view = agentMessageView(turn.content, parsed, s.task.kind);
    const step: AgentStep = {
      sessionId: s.id,
      turnId: turn.id,
      index: turn.index,
      agentTurn: agentTurnIndex + 1,
      maxTurns: this.options.maxTurns,
      parsed,
      view,
      answered: parsed.type === 'answer',
      modelMs,
    };
    if (view.type === 'screenshot' && this.deps.render) {
      try {
        step.png = await this.deps.render(view.html);
      } catch (err) {
        this.deps.log?.warn({ err: (err as Error).message, session: s.id }, 'cannot render the agent page');
      }
    }
    return step;
  }

  /** Rebuilds what to show for an agent turn already stored (after a restart, or to show it again). */
  async stepOf(turnId: string): Promise<AgentStep> {
    const turn = await this.retry(() => this.prisma.turn.findUniqueOrThrow({ where: { id: turnId } }));
    const s = await this.load(turn.sessionId);
    if (!s) throw new Error(`no session for turn ${turnId}`);
    const agentTurnIndex = s.turns.filter((t) => t.role === 'agent' && t.index < turn.index).length;
    const parsed = parseAgentMessage(turn.content, { kind: s.task.kind, turnIndex: agentTurnIndex, maxTurns: this.options.maxTurns });
    return this.toStep(s, turn, parsed, agentTurnIndex, 0);
  }

  /** Records the channel's id of the message that showed an agent turn (it has reached the person). */
  async markShown(turnId: string, externalMessageId: string, hooks?: Hooks): Promise<void> {
    await this.retry(() => this.prisma.turn.update({ where: { id: turnId }, data: { externalMessageId } }), hooks);
  }

  /**
   * Stores the person's message. Returns `duplicate: true` (and does nothing) for a message already stored or
   * being handled. Throws TurnRejectedError when it cannot be taken (the message says why).
   */
  async humanTurn(sessionId: string, text: string, externalMessageId: string | null, hooks?: Hooks): Promise<{ duplicate: boolean; turnId?: string }> {
    if (externalMessageId) {
      if (this.inFlightMessages.has(externalMessageId)) return { duplicate: true };
      const seen = await this.retry(() => this.prisma.turn.findUnique({ where: { externalMessageId }, select: { id: true } }), hooks);
      if (seen) return { duplicate: true };
    }
    if (this.isBusy(sessionId)) throw new TurnRejectedError('The agent is still writing. Please wait for its message, then answer.');
    if (externalMessageId) this.inFlightMessages.add(externalMessageId);
    try {
      return await this.sessionLock.run(sessionId, async () => {
        const s = await this.load(sessionId, hooks);
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
        const index = Math.max(...s.turns.map((t) => t.index)) + 1;
        const now = new Date();
        try {
          const turn = await this.retry(
            () =>
              this.prisma.$transaction(async (tx) => {
                const t = await tx.turn.create({ data: { sessionId, index, role: 'human', content, externalMessageId } });
                await tx.session.update({ where: { id: sessionId }, data: { turnCount: { increment: 1 }, lastActivityAt: now } });
                return t;
              }),
            hooks,
          );
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

  // ------------------------------------------------------------------------------------------ ending

  /** Scores the answer of an answered session (once; later calls return the stored evaluation). */
  async evaluate(sessionId: string, hooks?: Hooks): Promise<EvaluatedSession> {
    return this.sessionLock.run(`eval:${sessionId}`, async () => {
      const s = await this.retry(() => this.prisma.session.findUniqueOrThrow({ where: { id: sessionId }, include: { task: true, evaluation: true, ratings: true } }), hooks);
      if (s.status !== 'answered') throw new TurnRejectedError('This session has no answer to evaluate.');
      const answer = s.answer ?? '';
      if (s.evaluation) {
        const e = s.evaluation;
        const outcome: EvaluationOutcome = { score: e.score, success: e.success, detail: e.detail, evaluatorVersion: e.evaluatorVersion };
        if (e.testsPassed !== null) outcome.testsPassed = e.testsPassed;
        if (e.testsTotal !== null) outcome.testsTotal = e.testsTotal;
        if (e.metric !== null) outcome.metric = e.metric;
        return { sessionId, kind: s.task.kind, answer, outcome };
      }
      const outcome = await this.deps.evaluate(taskContent(s.task), answer);
      const rating = s.ratings[0]?.value ?? null;
      await this.retry(
        () =>
          this.prisma.$transaction(async (tx) => {
            await tx.evaluation.create({
              data: {
                sessionId,
                score: outcome.score,
                success: outcome.success,
                testsPassed: outcome.testsPassed ?? null,
                testsTotal: outcome.testsTotal ?? null,
                detail: (outcome.detail ?? {}) as Prisma.InputJsonValue,
                metric: outcome.metric ?? null,
                evaluatorVersion: outcome.evaluatorVersion,
              },
            });
            await tx.session.update({ where: { id: sessionId }, data: { reward: this.reward(outcome.score, rating) } });
          }),
        hooks,
      );
      this.deps.log?.info({ session: sessionId, score: outcome.score, success: outcome.success }, 'session evaluated');
      return { sessionId, kind: s.task.kind, answer, outcome };
    });
  }

  private reward(score: number, rating: number | null): number {
    const w = this.options.ratingWeight;
    if (rating === null || w === 0) return score;
    return (1 - w) * score + w * ((rating - 1) / 4);
  }

  /** Stores the person's 1-5 rating of their answered session (a second rating replaces the first). */
  async rate(sessionId: string, rater: Person, value: number, hooks?: Hooks): Promise<void> {
    if (!Number.isInteger(value) || value < 1 || value > 5) throw new TurnRejectedError('A rating is a whole number from 1 to 5.');
    await this.retry(async () => {
      const s = await this.prisma.session.findUnique({ where: { id: sessionId }, include: { participant: true, evaluation: true } });
      if (!s) throw new TurnRejectedError('This session no longer exists.');
      if (s.participant.discordUserId !== rater.externalId) throw new TurnRejectedError('Only the person who took part in this session can rate it.');
      if (s.status !== 'answered') throw new TurnRejectedError('Only a finished session can be rated.');
      await this.prisma.$transaction(async (tx) => {
        await tx.rating.upsert({
          where: { sessionId_raterId: { sessionId, raterId: s.participantId } },
          create: { sessionId, raterId: s.participantId, value },
          update: { value },
        });
        if (s.evaluation) await tx.session.update({ where: { id: sessionId }, data: { reward: this.reward(s.evaluation.score, value) } });
      });
    }, hooks);
  }

  async comment(sessionId: string, rater: Person, comment: string, hooks?: Hooks): Promise<void> {
    const text = comment.trim();
    if (text.length > 1000) throw new TurnRejectedError(`Your comment is ${text.length} characters long; the limit is 1000.`);
    await this.retry(async () => {
      const p = await findParticipant(this.prisma, rater.externalId);
      if (!p) throw new TurnRejectedError('Please rate the session first.');
      const updated = await this.prisma.rating.updateMany({ where: { sessionId, raterId: p.id }, data: { comment: text || null } });
      if (updated.count === 0) throw new TurnRejectedError('Please rate the session with the buttons first, then add a comment.');
    }, hooks);
  }

  /** Ends the person's active session at their request; returns it, or null when they had none. */
  async stop(externalId: string, hooks?: Hooks): Promise<Session | null> {
    return this.personLock.run(externalId, async () => {
      const p = await this.retry(() => findParticipant(this.prisma, externalId), hooks);
      if (!p) return null;
      const s = await this.retry(() => this.prisma.session.findFirst({ where: { participantId: p.id, status: 'active' } }), hooks);
      if (!s) return null;
      return this.sessionLock.run(s.id, () =>
        this.retry(() => this.prisma.session.update({ where: { id: s.id }, data: { status: 'abandoned', endedAt: new Date(), endReason: 'stopped' } }), hooks),
      );
    });
  }

  async status(externalId: string, hooks?: Hooks) {
    const p = await this.retry(() => findParticipant(this.prisma, externalId), hooks);
    if (!p) return { participant: null, active: null, answered: 0 };
    const [active, answered] = await this.retry(
      () =>
        Promise.all([
          this.prisma.session.findFirst({ where: { participantId: p.id, status: 'active' }, include: { task: true, policyVersion: true, turns: { select: { role: true } } } }),
          this.prisma.session.count({ where: { participantId: p.id, status: 'answered' } }),
        ]),
      hooks,
    );
    return { participant: p, active, answered };
  }

  /** The external id (Discord user id) of the person whose session this is, or null. */
  async ownerOf(sessionId: string, hooks?: Hooks): Promise<string | null> {
    const s = await this.retry(() => this.prisma.session.findUnique({ where: { id: sessionId }, select: { participant: { select: { discordUserId: true } } } }), hooks);
    return s?.participant.discordUserId ?? null;
  }

  async sessionByThread(threadId: string, hooks?: Hooks): Promise<Session | null> {
    return this.retry(() => this.prisma.session.findUnique({ where: { threadId } }), hooks);
  }

  /** Expires active sessions idle for longer than the configured time; returns them. */
  async expireIdle(now = new Date()): Promise<Session[]> {
    const cutoff = new Date(now.getTime() - this.options.idleMinutes * 60_000);
    const idle = await this.retry(() => this.prisma.session.findMany({ where: { status: 'active', channel: this.options.channel, lastActivityAt: { lt: cutoff } } }));
    const expired: Session[] = [];
    for (const s of idle) {
      if (this.isBusy(s.id)) continue;
      const n = await this.retry(() =>
        this.prisma.session.updateMany({ where: { id: s.id, status: 'active', lastActivityAt: { lt: cutoff } }, data: { status: 'expired', endedAt: now, endReason: 'idle' } }),
      );
      if (n.count === 1) expired.push({ ...s, status: 'expired', endedAt: now, endReason: 'idle' });
    }
    if (expired.length) this.deps.log?.info({ count: expired.length }, 'expired idle sessions');
    return expired;
  }

  /** Runs expireIdle every `everyMs`, handing what expired to `onExpired`. */
  startExpiry(everyMs: number, onExpired: (s: Session) => void | Promise<void>): void {
    this.expiryTimer = setInterval(() => {
      this.expireIdle()
        .then(async (list) => {
          for (const s of list) await onExpired(s);
        })
        .catch((err) => this.deps.log?.warn({ err: (err as Error).message }, 'idle expiry failed'));
    }, everyMs);
    this.expiryTimer.unref();
  }

  /**
   * What a (re)started channel must finish: sessions whose agent owes a message, agent messages stored but
   * never shown, answers never evaluated.
   */
  async pendingWork(): Promise<PendingWork[]> {
    const sessions = await this.retry(() =>
      this.prisma.session.findMany({
        where: { channel: this.options.channel, OR: [{ status: 'active' }, { status: 'answered', evaluation: null }] },
        include: { turns: { orderBy: { index: 'asc' } } },
        orderBy: { startedAt: 'asc' },
      }),
    );
    const work: PendingWork[] = [];
    for (const { turns, ...session } of sessions) {
      const last = turns.filter((t) => t.role !== 'system').at(-1);
      if (last && last.role === 'agent' && last.externalMessageId === null) work.push({ kind: 'show', session, turn: last });
      else if (session.status === 'answered') work.push({ kind: 'evaluate', session });
      else if (!last || last.role === 'human') work.push({ kind: 'agent', session });
    }
    return work;
  }

  async close(): Promise<void> {
    if (this.expiryTimer) clearInterval(this.expiryTimer);
    this.expiryTimer = null;
    for (const a of this.agents.values()) {
      const agent = await a.catch(() => null);
      const closable = agent as unknown as { close?: () => Promise<void> | void } | null;
      await Promise.resolve(closable?.close?.()).catch(() => {});
    }
    this.agents.clear();
  }
}
