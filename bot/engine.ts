// The session engine: everything about a collaboration session that does not depend on where it happens,
// including the turn script itself (agent speaks -> stored -> shown -> person replies -> ... -> answer ->
// evaluation -> result -> rating). Discord, the console and the benchmark drive the same engine through a
// SessionView, a small adapter that only shows things; no channel touches the database.
//
// Rules kept here:
// - a person must have accepted the consent text, must not be banned, and collection must not be paused;
// - one active session per person; tasks assigned by balance (see assign.ts);
// - turns follow tasks/protocol.ts (agent first, alternate, at most maxTurns agent turns, answer marker, caps);
// - every turn is stored BEFORE it is shown (the caller shows what a method returned, after it returned);
// - an agent turn records the channel's message id once shown, so a restart re-shows what never got out;
// - a redelivered human message (same external id) is stored once and answered once;
// - when the database is unreachable, each write is retried with back-off (the caller is told, to tell the
//   person to wait), so nothing the person sent is lost;
// - when the agent's server is unavailable (AgentUnavailableError), its agent cannot be loaded, or it has not
//   answered within agentWaitMs, the person is told, the session waits and the same turn is tried again with
//   back-off: nothing is stored until the agent has answered, and the wait ends with the session (stop, expiry);
// - consent is accepted here, with its audit row, whatever the channel;
// - every write goes through prisma/session-store.ts (one reward formula, one meaning of each counter).
import { AgentUnavailableError, type Agent, type AgentReply } from '../tasks/agent.ts';
import type { TaskKind } from '../tasks/model.ts';
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
import type { Participant, PolicyVersion, Session, Task, Turn } from '../prisma/generated/client.ts';
import { UniqueViolationError, toDatabaseError } from '../prisma/errors.ts';
import {
  appendAgentTurn,
  appendHumanTurn,
  createSession,
  endSession,
  outcomeOf,
  recordComment,
  markRatingAsked,
  markResultShown,
  recordEvaluation,
  recordRating,
} from '../prisma/session-store.ts';
import { taskContent } from '../prisma/task-store.ts';
import type { Logger } from '../tasks/logger.ts';
import { neededKind, NoTaskAvailableError, pickTask } from './assign.ts';
import { assignSession } from './experiments.ts';
import { goldAgent, goldSource } from './gold.ts';
import { acceptConsent, findParticipant, hasConsent } from './consent.ts';
import type { PolicyWatcher } from './deploy-watch.ts';
import type { Evaluate, EvaluationOutcome, RenderPage } from './evaluator.ts';
import { erasedId } from './privacy.ts';
import { messageLimitRefusal, sessionLimitRefusal, type Limits } from './limits.ts';
import { KeyedMutex } from './locks.ts';
import { audit, isBannedIn, isPaused } from './moderation.ts';
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
  /** First and longest wait between tries of a turn while the agent's server is unavailable. */
  agentRetryMs?: { initial: number; max: number };
  /**
   * How long the agent may take to load and answer before the person is told it is unavailable (the wait goes
   * on, looked at again each time this passes, for as long as the session is active; default 2 minutes).
   */
  agentWaitMs?: number;
  /** Per-person limits (bot/limits.ts); unset: none. */
  limits?: Limits;
  /** Secret of the keyed hash a deleted person is kept under (bot/privacy.ts), so that their ban still applies. */
  erasureKey?: string;
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
  /** Told what happened, for the bot's metrics (bot/health.ts). */
  observer?: EngineObserver;
}

/** What the engine reports as it works (counts and latencies; never any text). */
export interface EngineObserver {
  /** An agent turn was generated and stored, taking `ms` (model time included). */
  agentTurn?(ms: number): void;
  humanTurn?(): void;
  evaluationFailed?(): void;
}

export type RefusalReason = 'no-consent' | 'banned' | 'paused' | 'active-session' | 'no-policy' | 'no-task' | 'no-renderer' | 'limit';

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
  /** The agent's server is unavailable; the turn will be tried again. Called at most once per turn. */
  onAgentWaiting?: () => void | Promise<void>;
  onAgentRecovered?: () => void | Promise<void>;
}

/**
 * How a channel shows the engine's results. Each method shows something to the person and nothing else; the
 * engine decides what comes next.
 */
export interface SessionView {
  /** Shows the agent's message; returns the channel's id of the (last) message that carried it. */
  showAgentMessage(step: AgentStep): Promise<string>;
  /** Shows the answer's score (or that it could not be scored now). */
  showResult(result: EvaluatedSession | { sessionId: string; error: string }): Promise<void>;
  /** Offers the 1-5 rating (buttons on Discord; the console asks after advance() returns). */
  askRating(sessionId: string): Promise<void>;
  /** A short notice (the agent failed, the session ended). */
  notice(text: string): Promise<void>;
  /** The agent is working (Discord's typing indicator). */
  typing?(): Promise<void>;
}

/** Where a session stands after advance(): whose move it is. */
export type SessionState = 'awaiting-human' | 'awaiting-rating' | 'ended';

export interface StartedSession {
  sessionId: string;
  taskId: string;
  kind: TaskKind;
  description: string;
  policyName: string;
  /** In an A/B experiment: the person must not be told which version plays (policyName is for logs only). */
  blind: boolean;
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
  private closing = false;
  private readonly waitingForAgent = new Set<string>();

  constructor(
    readonly deps: EngineDeps,
    readonly options: EngineOptions,
  ) {}

  private get prisma() {
    return this.deps.db.prisma;
  }

  private get observer(): EngineObserver | undefined {
    return this.deps.observer;
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

  /** Records the person's acceptance of the consent text, with its audit row (every channel alike). */
  async acceptConsent(person: Person, hooks?: Hooks): Promise<Participant> {
    return this.retry(async () => {
      const p = await acceptConsent(this.prisma, person.externalId, person.displayName);
      await audit(this.prisma, person.externalId, 'consent.accept', null, { channel: this.options.channel });
      return p;
    }, hooks);
  }

  // ------------------------------------------------------------------------------------------ starting

  /** Checks everything and creates the session; the caller shows the hidden information, then calls agentStep. */
  async start(person: Person, kindWanted: TaskKind | null, where: { guildId?: string; channelId?: string } = {}, hooks?: Hooks): Promise<StartedSession> {
    return this.personLock.run(person.externalId, async () => {
      const p = await this.retry(() => findParticipant(this.prisma, person.externalId), hooks);
      if (p && isBannedIn(p, where.guildId)) throw new RefusedError('banned', 'You are not allowed to take part in sessions.');
      const key = this.options.erasureKey;
      const erased = key ? await this.retry(() => findParticipant(this.prisma, erasedId(key, person.externalId)), hooks) : null;
      if (erased && isBannedIn(erased, where.guildId)) throw new RefusedError('banned', 'You are not allowed to take part in sessions.');
      if (!hasConsent(p)) throw new RefusedError('no-consent', 'Please accept the data-collection notice first.');
      const participant = p!;
      if (await this.retry(() => isPaused(this.prisma), hooks)) {
        throw new RefusedError('paused', 'Collection is paused by the moderators right now. Please try again later.');
      }
      const active = await this.retry(() => this.prisma.session.findFirst({ where: { participantId: participant.id, status: 'active' } }), hooks);
      if (active) {
        throw new RefusedError('active-session', 'You already have a session running. Finish it, or end it with /task stop.', active.id);
      }
      const limits = this.options.limits;
      if (limits) {
        const refusal = await this.retry(() => sessionLimitRefusal(this.prisma, participant.id, limits), hooks);
        if (refusal) throw new RefusedError('limit', refusal);
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
      // Now and then a gold check replays a known session's agent (bot/gold.ts); otherwise a running A/B
      // experiment decides which version plays (bot/experiments.ts). The session keeps what it was given.
      const goldSourceId = kind === 'backend' ? await this.retry(() => goldSource(this.prisma, taskId, Math.random()), hooks) : null;
      const assigned = goldSourceId ? null : await this.retry(() => assignSession(this.prisma, taskId), hooks);
      const playing = assigned?.policy ?? policy;
      const session = await this.retry(
        () =>
          createSession(this.prisma, {
            taskId,
            participantId: participant.id,
            policyVersionId: goldSourceId ? null : playing.id,
            ...(assigned ? { experimentId: assigned.experimentId, arm: assigned.arm } : {}),
            ...(goldSourceId ? { goldSourceId } : {}),
            channel: this.options.channel,
            simulated: this.options.channel === 'simulated',
            guildId: where.guildId ?? null,
            channelId: where.channelId ?? null,
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
        policyName: playing.name,
        blind: assigned !== null || goldSourceId !== null,
        view,
      };
      if (view.kind === 'frontend') started.targetPng = await this.deps.render!(view.targetHtml);
      this.deps.log?.info({ session: session.id, kind, task: taskId, policy: goldSourceId ? null : playing.name, arm: assigned?.arm, gold: goldSourceId }, 'session started');
      return started;
    });
  }

  /** Re-reads the deployed policy now (after a deploy from this process), rather than at the next poll. */
  async refreshPolicy(): Promise<PolicyVersion | null> {
    return this.deps.policies.refresh();
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
    if (!policy && !s.goldSourceId) throw new Error(`session ${sessionId} has no policy and none is deployed`);
    const gold = s.goldSourceId ? await this.retry(() => goldAgent(this.prisma, s.goldSourceId!), hooks) : null;
    // Loaded within the wait for its reply: a first load (the local server's, after a restart) can take minutes.
    const agent = gold ? async () => gold : () => this.agentFor(policy!);
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
        const r = await this.replyWhenAvailable(agent, dialogue, sessionId, hooks);
        if (r === null) return null; // the session ended (or the engine closed) while the agent was away
        reply = r;
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
      const why = failure ? `agent-error: ${failure}` : 'agent-error: message over the length cap';
      await this.retry(() => endSession(this.prisma, sessionId, 'abandoned', why), hooks);
      throw new TurnRejectedError('The agent failed to write a usable message, so this session had to end. Sorry! You can start a new one.');
    }
    const parsed = parseAgentMessage(text, { kind: content.kind, turnIndex: agentTurnIndex, maxTurns });
    const done = reply;
    const turn = await this.storeUnlessGone(sessionId, () =>
      this.retry(
      () =>
        appendAgentTurn(
          this.prisma,
          sessionId,
          {
            content: text!,
            rawOutput: done.text,
            latencyMs: Math.round(modelMs),
            promptTokens: done.promptTokens ?? null,
            completionTokens: done.completionTokens ?? null,
            provenance: done.provenance ?? null,
          },
          parsed.type === 'answer' ? { answer: parsed.answer ?? '', endReason: parsed.fallback ? 'turn-limit' : 'answered' } : undefined,
        ),
      hooks,
      ),
    );
    if (!turn) return null; // the session was deleted while the agent wrote (/privacy delete): nothing to show
    this.observer?.agentTurn?.(modelMs);
    return this.toStep(s, turn, parsed, agentTurnIndex, modelMs);
  }

  /** Runs a write for a session; null (instead of the database's error) when the session no longer exists. */
  private async storeUnlessGone<T>(sessionId: string, write: () => Promise<T>): Promise<T | null> {
    try {
      return await write();
    } catch (err) {
      const gone = await this.prisma.session.findUnique({ where: { id: sessionId }, select: { id: true } }).then((x) => !x, () => false);
      if (gone) return null;
      throw err;
    }
  }

  /**
   * The agent's reply (the agent loaded first), waiting out an unavailable or silent server: when it fails as
   * unavailable, cannot be loaded, or has not answered within agentWaitMs, the person is told once; a failed try
   * is sent again with back-off, a silent one given more time, for as long as the session is active. Null when it
   * stopped being active (stopped, expired) or the engine closed meanwhile; nothing has been stored then.
   */
  private async replyWhenAvailable(agent: () => Promise<Agent>, dialogue: ReturnType<typeof buildDialogue>, sessionId: string, hooks?: Hooks): Promise<AgentReply | null> {
    const { initial, max } = this.options.agentRetryMs ?? { initial: 2_000, max: 30_000 };
    const patience = this.options.agentWaitMs ?? 120_000;
    let delay = initial;
    let waited = false;
    let abort: AbortController | null = null;
    const unavailable = async (why: string) => {
      if (waited) return;
      waited = true;
      this.waitingForAgent.add(sessionId);
      this.deps.log?.warn({ session: sessionId, err: why }, 'agent unavailable; the session waits');
      await Promise.resolve(hooks?.onAgentWaiting?.()).catch(() => {});
    };
    const gone = async () => {
      const still = await this.retry(() => this.prisma.session.findUnique({ where: { id: sessionId }, select: { status: true } }), hooks);
      return still?.status !== 'active' || this.closing;
    };
    try {
      for (;;) {
        const signal = (abort = new AbortController()).signal;
        const attempt = agent().then(
          (a) => a.reply(dialogue, { signal }),
          (err: unknown) => {
            throw err instanceof AgentUnavailableError ? err : new AgentUnavailableError(`the agent cannot be loaded: ${(err as Error).message}`);
          },
        );
        try {
          while (!(await settlesWithin(attempt, patience))) {
            await unavailable(`no answer within ${patience} ms`);
            if (await gone()) return null;
          }
          const reply = await attempt;
          if (waited) {
            // Stopped or expired while it waited: its late reply is not stored.
            if (await gone()) return null;
            await Promise.resolve(hooks?.onAgentRecovered?.()).catch(() => {});
          }
          return reply;
        } catch (err) {
          if (!(err instanceof AgentUnavailableError) || this.closing) throw err;
          await unavailable(err.message);
          await new Promise((r) => setTimeout(r, Math.max(delay, err.retryAfterMs ?? 0)));
          delay = Math.min(delay * 2, max);
          if (await gone()) return null;
        }
      }
    } finally {
      abort?.abort(); // a reply still running for a session that ended is not waited for
      this.waitingForAgent.delete(sessionId);
    }
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
    // updateMany: a turn deleted meanwhile (/privacy delete) is nothing to record, not an error.
    await this.retry(() => this.prisma.turn.updateMany({ where: { id: turnId }, data: { externalMessageId } }), hooks);
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
        const limits = this.options.limits;
        if (limits) {
          const refusal = await this.retry(() => messageLimitRefusal(this.prisma, s.participantId, content.length, limits), hooks);
          if (refusal) throw new TurnRejectedError(refusal);
        }
        try {
          const turn = await this.storeUnlessGone(sessionId, () => this.retry(() => appendHumanTurn(this.prisma, sessionId, { content, externalMessageId }), hooks));
          if (!turn) throw new TurnRejectedError('This session no longer exists.');
          this.observer?.humanTurn?.();
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
      const s = await this.retry(() => this.prisma.session.findUniqueOrThrow({ where: { id: sessionId }, include: { task: true, evaluation: true } }), hooks);
      if (s.status !== 'answered') throw new TurnRejectedError('This session has no answer to evaluate.');
      const answer = s.answer ?? '';
      if (s.evaluation) return { sessionId, kind: s.task.kind, answer, outcome: outcomeOf(s.evaluation) };
      const outcome = await this.deps.evaluate(taskContent(s.task), answer);
      await this.retry(() => recordEvaluation(this.prisma, sessionId, outcome, this.options.ratingWeight), hooks);
      this.deps.log?.info({ session: sessionId, score: outcome.score, success: outcome.success }, 'session evaluated');
      return { sessionId, kind: s.task.kind, answer, outcome };
    });
  }

  /** Stores the person's 1-5 rating of their answered session (a second rating replaces the first). */
  async rate(sessionId: string, rater: Person, value: number, hooks?: Hooks): Promise<void> {
    if (!Number.isInteger(value) || value < 1 || value > 5) throw new TurnRejectedError('A rating is a whole number from 1 to 5.');
    await this.retry(async () => {
      const s = await this.prisma.session.findUnique({ where: { id: sessionId }, include: { participant: true } });
      if (!s) throw new TurnRejectedError('This session no longer exists.');
      if (s.participant.discordUserId !== rater.externalId) throw new TurnRejectedError('Only the person who took part in this session can rate it.');
      if (s.status !== 'answered') throw new TurnRejectedError('Only a finished session can be rated.');
      await recordRating(this.prisma, sessionId, s.participantId, value, this.options.ratingWeight);
    }, hooks);
  }

  async comment(sessionId: string, rater: Person, comment: string, hooks?: Hooks): Promise<void> {
    const text = comment.trim();
    if (text.length > 1000) throw new TurnRejectedError(`Your comment is ${text.length} characters long; the limit is 1000.`);
    await this.retry(async () => {
      const p = await findParticipant(this.prisma, rater.externalId);
      if (!p) throw new TurnRejectedError('Please rate the session first.');
      if (!(await recordComment(this.prisma, sessionId, p.id, text))) throw new TurnRejectedError('Please rate the session with the buttons first, then add a comment.');
    }, hooks);
  }

  /** Ends the person's active session at their request; returns it, or null when they had none. */
  async stop(externalId: string, hooks?: Hooks): Promise<Session | null> {
    return this.personLock.run(externalId, async () => {
      const p = await this.retry(() => findParticipant(this.prisma, externalId), hooks);
      if (!p) return null;
      const s = await this.retry(() => this.prisma.session.findFirst({ where: { participantId: p.id, status: 'active' } }), hooks);
      if (!s) return null;
      const end = async () => {
        await this.retry(() => endSession(this.prisma, s.id, 'abandoned', 'stopped'), hooks);
        return this.retry(() => this.prisma.session.findUniqueOrThrow({ where: { id: s.id } }), hooks);
      };
      // An agent waiting for its server holds the session's lock until the session ends: end it without the
      // lock (the wait sees it and stores nothing). Otherwise wait for a turn being written to be stored.
      return this.waitingForAgent.has(s.id) ? end() : this.sessionLock.run(s.id, end);
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
      // A session being written is left alone, unless it is only waiting for its agent: that wait ends with it.
      if (this.isBusy(s.id) && !this.waitingForAgent.has(s.id)) continue;
      const ended = await this.retry(() => endSession(this.prisma, s.id, 'expired', 'idle', now, cutoff));
      if (ended) expired.push({ ...s, status: 'expired', endedAt: now, endReason: 'idle' });
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
        where: { channel: this.options.channel, OR: [{ status: 'active' }, { status: 'answered', OR: [{ resultShownAt: null }, { ratingAskedAt: null }] }] },
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

  /**
   * Active sessions of this channel waiting for the person's reply to a shown agent message, with that
   * message's channel id: a restarted channel reads what the person sent after it while it was down.
   */
  async awaitingReplies(): Promise<{ session: Session; owner: string; after: string }[]> {
    const sessions = await this.retry(() =>
      this.prisma.session.findMany({
        where: { channel: this.options.channel, status: 'active' },
        include: { turns: { where: { role: { not: 'system' } }, orderBy: { index: 'desc' }, take: 1 }, participant: { select: { discordUserId: true } } },
        orderBy: { startedAt: 'asc' },
      }),
    );
    return sessions.flatMap(({ turns, participant, ...session }) => {
      const last = turns[0];
      return last?.role === 'agent' && last.externalMessageId ? [{ session, owner: participant.discordUserId, after: last.externalMessageId }] : [];
    });
  }

  // ------------------------------------------------------------------------------------------ the turn script

  /**
   * Does what the session owes next, showing each step through `view`: the agent's message (generated and
   * stored, or stored earlier but never shown), then, once the agent has answered, the evaluation, the result
   * and the rating prompt. Returns whose move it is. Safe to call again at any time (after a restart, a
   * duplicate event): what is stored and shown is never done twice.
   */
  async advance(sessionId: string, view: SessionView, hooks?: Hooks): Promise<SessionState> {
    for (;;) {
      const s = await this.load(sessionId, hooks);
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
      if (!step) continue; // the session changed under us (stopped, answered elsewhere): look again
      await this.present(step, view, hooks);
    }
  }

  /** Stores the person's reply, then lets the agent answer it (see advance). Null for a duplicate message. */
  async receive(sessionId: string, text: string, externalMessageId: string | null, view: SessionView, hooks?: Hooks): Promise<SessionState | null> {
    const r = await this.humanTurn(sessionId, text, externalMessageId, hooks);
    if (r.duplicate) return null;
    return this.advance(sessionId, view, hooks);
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
    const sessionId = s.id;
    if (!s.resultShownAt) {
      await view.typing?.().catch(() => {});
      let result: EvaluatedSession | null = null;
      try {
        result = await this.evaluate(sessionId, hooks);
      } catch (err) {
        // The answer is stored; a later advance() (or the next start) scores it. The rating need not wait.
        this.deps.log?.error({ err: (err as Error).message, session: sessionId }, 'evaluation failed');
        this.observer?.evaluationFailed?.();
        await view.showResult({ sessionId, error: 'evaluation failed' });
      }
      if (result) {
        await view.showResult(result);
        await this.retry(() => markResultShown(this.prisma, sessionId), hooks);
      }
    }
    if (!s.ratingAskedAt) {
      await view.askRating(sessionId);
      await this.retry(() => markRatingAsked(this.prisma, sessionId), hooks);
    }
  }

  /**
   * Finishes what a previous run left halfway (`work`; default: all of pendingWork()), every session at once, so
   * that one whose agent is slow (a first load, a server away) holds up no other: `viewFor` gives the view to
   * show it in (null: it cannot be shown here, e.g. its thread is gone; it is left as it is).
   */
  async resume(viewFor: (session: Session) => Promise<SessionView | null>, work?: PendingWork[]): Promise<number> {
    const done = await Promise.all(
      (work ?? (await this.pendingWork())).map(async (w) => {
        try {
          const view = await viewFor(w.session);
          if (!view) {
            this.deps.log?.warn({ session: w.session.id }, 'cannot show this session here; leaving it for later');
            return false;
          }
          await this.advance(w.session.id, view);
          return true;
        } catch (err) {
          this.deps.log?.error({ err: (err as Error).message, session: w.session.id }, 'cannot resume session');
          return false;
        }
      }),
    );
    return done.filter(Boolean).length;
  }

  /** The dialogue of a session so far, for showing it again (system notices left out). */
  async transcript(sessionId: string, hooks?: Hooks): Promise<DialogueTurn[]> {
    const turns = await this.retry(() => this.prisma.turn.findMany({ where: { sessionId }, orderBy: { index: 'asc' } }), hooks);
    return dialogueTurns(turns);
  }

  /**
   * Closes the agents of versions no longer deployed that no active session still uses (an adapter agent
   * unloads its adapter from the server then). Called on every deploy.
   */
  async evictRetired(): Promise<string[]> {
    const deployedId = this.deps.policies.deployed?.id;
    const evicted: string[] = [];
    for (const [policyId, a] of [...this.agents]) {
      if (policyId === deployedId) continue;
      const inUse = await this.retry(() => this.prisma.session.count({ where: { policyVersionId: policyId, status: 'active' } }));
      if (inUse > 0) continue;
      this.agents.delete(policyId);
      await closeAgent(a);
      evicted.push(policyId);
    }
    if (evicted.length) this.deps.log?.info({ evicted }, 'closed agents of retired policy versions');
    return evicted;
  }

  async close(): Promise<void> {
    this.closing = true;
    if (this.expiryTimer) clearInterval(this.expiryTimer);
    this.expiryTimer = null;
    for (const a of this.agents.values()) await closeAgent(a);
    this.agents.clear();
  }
}

/** Whether `p` settles (either way) within `ms`. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([p.then(() => true, () => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

async function closeAgent(a: Promise<Agent>): Promise<void> {
  const agent = await a.catch(() => null);
  const closable = agent as unknown as { close?: () => Promise<void> | void } | null;
  await Promise.resolve(closable?.close?.()).catch(() => {});
}
