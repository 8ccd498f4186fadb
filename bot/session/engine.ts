// The session engine that channels (Discord, the console, the benchmark) call: it composes admission, the turn
// script, recovery and expiry, and the agent cache (the rules each keeps: bot/session/README.md) and delegates.
import type { TaskKind } from '../../tasks/model.ts';
import type { CollaboratorView, DialogueTurn } from '../../tasks/protocol.ts';
import type { Participant, PolicyVersion, Session } from '../../prisma/generated/client.ts';
import { findParticipant } from '../../prisma/participant-store.ts';
import { Admissions, type Admission, type StudyConsent } from './admission.ts';
import type { PayPlatform } from '../../prisma/pay-account-store.ts';
import { AgentCache } from './agents.ts';
import { EngineContext } from './context.ts';
import { Recovery } from './recovery.ts';
import { Sweep } from './sweep.ts';
import { AgentSteps } from './agent-step.ts';
import { Answers } from './answers.ts';
import { TurnScript } from './turns.ts';
import type {
  AgentStep,
  EngineDeps,
  EngineOptions,
  EvaluatedSession,
  Hooks,
  PendingWork,
  Person,
  ResumedView,
  SessionState,
  SessionView,
  StartedSession,
  Where,
} from './types.ts';

export * from './types.ts';
export type { ScoringState } from './scoring.ts';
export type { StudyConsent } from './admission.ts';
// The platforms a study may ask an id of, for the channels (which talk to the engine, not the stores).
export { isPayPlatform, PAY_PLATFORMS } from '../../prisma/pay-account-store.ts';

export class SessionEngine {
  private readonly ctx: EngineContext;
  private readonly admissions: Admissions;
  private readonly agents: AgentCache;
  private readonly steps: AgentSteps;
  private readonly answers: Answers;
  private readonly turns: TurnScript;
  private readonly recovery: Recovery;
  private readonly sweeper: Sweep;

  constructor(
    readonly deps: EngineDeps,
    readonly options: EngineOptions,
  ) {
    this.ctx = new EngineContext(deps, options);
    this.admissions = new Admissions(this.ctx);
    this.agents = new AgentCache(this.ctx);
    this.steps = new AgentSteps(this.ctx, this.agents);
    this.answers = new Answers(this.ctx);
    this.turns = new TurnScript(this.ctx, this.agents, this.steps, this.answers);
    this.recovery = new Recovery(this.ctx, this.turns, this.agents);
    this.sweeper = new Sweep(this.ctx, this.recovery);
  }

  // ------------------------------------------------------------------------------------------ people (admission.ts)

  participant(externalId: string, hooks?: Hooks): Promise<Participant | null> {
    return this.admissions.participant(externalId, hooks);
  }

  /** Records the person's acceptance of the consent text (the bot's, or the version of a study's that was shown), audited. */
  acceptConsent(
    person: Person,
    consent?: Pick<StudyConsent, 'studyId' | 'version'>,
    hooks?: Hooks,
  ): Promise<Participant> {
    return this.admissions.acceptConsent(person, consent, hooks);
  }

  /** Stores the person's participant id on a study's recruiting platform (pay data; a StudyError when malformed). */
  setPlatformId(person: Person, platform: PayPlatform, id: string, hooks?: Hooks): Promise<void> {
    return this.admissions.setPlatformId(person, platform, id, hooks);
  }

  /** May the person take part here now (admitted in a study, needs to accept a consent text, or refused and why)? */
  admission(
    person: Pick<Person, 'externalId'>,
    where: Pick<Where, 'guildId' | 'channelId'> = {},
    hooks?: Hooks,
  ): Promise<Admission> {
    return this.admissions.admission(person, where, hooks);
  }

  /**
   * Checks everything and creates the session; the caller shows the hidden information, then calls agentStep.
   * `admitted`: the admission the caller has just made (admission() for this person and place), not made again.
   */
  start(
    person: Person,
    kindWanted: TaskKind | null,
    where: Where = {},
    hooks?: Hooks,
    admitted?: Admission,
  ): Promise<StartedSession> {
    return this.admissions.start(person, kindWanted, where, hooks, admitted);
  }

  /** Re-reads the deployed policy now (after a deploy from this process), rather than at the next poll. */
  refreshPolicy(): Promise<PolicyVersion | null> {
    return this.deps.policies.refresh();
  }

  /** Records where the session is shown (a Discord thread). */
  attachThread(sessionId: string, threadId: string, hooks?: Hooks): Promise<void> {
    return this.admissions.attachThread(sessionId, threadId, hooks);
  }

  /** Re-shows the hidden information of a session (e.g. on /task status). */
  hiddenInfo(sessionId: string): Promise<{ view: CollaboratorView; targetPng?: Buffer }> {
    return this.admissions.hiddenInfo(sessionId);
  }

  // ------------------------------------------------- the turn script (turns.ts, agent-step.ts, answers.ts)

  /** Is the agent working on this session right now (the person must wait for its message)? */
  isBusy(sessionId: string): boolean {
    return this.ctx.isBusy(sessionId);
  }

  /** Does what the session owes next, showing each step through `view`; returns whose move it is. */
  advance(sessionId: string, view: SessionView, hooks?: Hooks): Promise<SessionState> {
    return this.turns.advance(sessionId, view, hooks);
  }

  /** Stores the person's reply, then lets the agent answer it (see advance). Null for a duplicate message. */
  receive(
    sessionId: string,
    text: string,
    externalMessageId: string | null,
    view: SessionView,
    hooks?: Hooks,
  ): Promise<SessionState | null> {
    return this.turns.receive(sessionId, text, externalMessageId, view, hooks);
  }

  /** The agent's next message, generated, checked and stored; null when the agent owes nothing. */
  agentStep(sessionId: string, hooks?: Hooks): Promise<AgentStep | null> {
    return this.steps.agentStep(sessionId, hooks);
  }

  /** Rebuilds what to show for an agent turn already stored. */
  stepOf(turnId: string): Promise<AgentStep> {
    return this.steps.stepOf(turnId);
  }

  /** Records the channel's id of the message that showed an agent turn (it has reached the person). */
  markShown(turnId: string, externalMessageId: string, hooks?: Hooks): Promise<void> {
    return this.turns.markShown(turnId, externalMessageId, hooks);
  }

  /** Stores the person's message (`duplicate: true` for one already stored or being handled). */
  humanTurn(
    sessionId: string,
    text: string,
    externalMessageId: string | null,
    hooks?: Hooks,
  ): Promise<{ duplicate: boolean; turnId?: string }> {
    return this.turns.humanTurn(sessionId, text, externalMessageId, hooks);
  }

  /** Scores the answer of an answered session (once; later calls return the stored evaluation). */
  evaluate(sessionId: string, hooks?: Hooks): Promise<EvaluatedSession> {
    return this.answers.evaluate(sessionId, hooks);
  }

  /** Answers waiting for a place in the scoring pool, and being scored now (for /metrics). */
  scoringLoad(): { queued: number; running: number } {
    return this.ctx.scoring.load;
  }

  /** Stores the person's 1-5 rating of their answered session (a second rating replaces the first). */
  rate(sessionId: string, rater: Person, value: number, hooks?: Hooks): Promise<void> {
    return this.answers.rate(sessionId, rater, value, hooks);
  }

  comment(sessionId: string, rater: Person, comment: string, hooks?: Hooks): Promise<void> {
    return this.answers.comment(sessionId, rater, comment, hooks);
  }

  /** Ends the person's active session at their request; returns it, or null when they had none. */
  stop(externalId: string, hooks?: Hooks): Promise<Session | null> {
    return this.turns.stop(externalId, hooks);
  }

  /** The dialogue of a session so far, for showing it again (system notices left out). */
  transcript(sessionId: string, hooks?: Hooks): Promise<DialogueTurn[]> {
    return this.turns.transcript(sessionId, hooks);
  }

  // ------------------------------------------------------------------------------------------ lookups

  async status(externalId: string, hooks?: Hooks) {
    const { ctx } = this;
    const p = await ctx.retry(() => findParticipant(ctx.prisma, externalId), hooks);
    if (!p) return { participant: null, active: null, answered: 0 };
    const [active, answered] = await ctx.retry(
      () =>
        Promise.all([
          ctx.prisma.session.findFirst({
            where: { participantId: p.id, status: 'active' },
            include: { task: true, policyVersion: true, turns: { select: { role: true } } },
          }),
          ctx.prisma.session.count({ where: { participantId: p.id, status: 'answered' } }),
        ]),
      hooks,
    );
    return { participant: p, active, answered };
  }

  /**
   * The session shown in a thread and the external id (Discord user id) of the person whose it is, or null. One
   * statement (through Prisma's relation it is two round trips); neither ever changes, so callers may keep it.
   */
  async sessionInThread(threadId: string, hooks?: Hooks): Promise<{ sessionId: string; owner: string } | null> {
    const rows = await this.ctx.retry(
      () =>
        this.ctx.prisma.$queryRaw<
          { id: string; discordUserId: string }[]
        >`SELECT s.id, p."discordUserId" FROM "Session" s JOIN "Participant" p ON p.id = s."participantId" WHERE s."threadId" = ${threadId}`,
      hooks,
    );
    return rows[0] ? { sessionId: rows[0].id, owner: rows[0].discordUserId } : null;
  }

  // ------------------------------------------------------------------------------------------ recovery and expiry (recovery.ts)

  /** What a (re)started channel must finish: agent messages owed or never shown, answers never evaluated. */
  pendingWork(): Promise<PendingWork[]> {
    return this.recovery.pendingWork();
  }

  /**
   * Finishes what a previous run left halfway (`work`; default: all pending work), all sessions at once, each in
   * the view and with the hooks `viewFor` gives (null: left as it is).
   */
  resume(viewFor: (session: Session) => Promise<ResumedView | null>, work?: PendingWork[]): Promise<number> {
    return this.recovery.resume(viewFor, work);
  }

  /** Active sessions waiting for the person's reply to a shown agent message, with that message's channel id. */
  awaitingReplies(): Promise<{ session: Session; owner: string; after: string }[]> {
    return this.recovery.awaitingReplies();
  }

  /** Ends active sessions of a thread channel that never got their thread (a start cut off by a kill). */
  endThreadless(startedBefore: Date): Promise<Session[]> {
    return this.recovery.endThreadless(startedBefore);
  }

  /** Expires active sessions idle for longer than the configured time; returns them. */
  expireIdle(now?: Date): Promise<Session[]> {
    return this.recovery.expireIdle(now);
  }

  /** Runs expireIdle every `everyMs`, handing what expired to `onExpired`. */
  startExpiry(everyMs: number, onExpired: (s: Session) => void | Promise<void>): void {
    this.recovery.startExpiry(everyMs, onExpired);
  }

  // ------------------------------------------------------------------------------------------ overdue work (sweep.ts)

  /** Steps owed that nobody has worked on for longer than `overdueMs` (readiness and /metrics count them). */
  overdue(now?: Date): Promise<PendingWork[]> {
    return this.sweeper.overdue(now?.getTime());
  }

  /** Hands what is overdue now to `advance` (normally by resume); returns what it handed over. */
  sweep(advance: (work: PendingWork[]) => void, now?: Date): Promise<PendingWork[]> {
    return this.sweeper.sweep(advance, now?.getTime());
  }

  /** Sweeps every `everyMs`. */
  startSweep(everyMs: number, advance: (work: PendingWork[]) => void): void {
    this.sweeper.start(everyMs, advance);
  }

  // ------------------------------------------------------------------------------------------ agents (agents.ts)

  /** Closes the agents of versions no longer deployed that no active session still uses. Called on every deploy. */
  evictRetired(): Promise<string[]> {
    return this.agents.evictRetired();
  }

  async close(): Promise<void> {
    this.ctx.closing = true;
    this.recovery.stopExpiry();
    this.sweeper.stop();
    // Answers still waiting are left owed in the database; those being scored are finished and stored.
    await this.ctx.scoring.close();
    await this.agents.closeAll();
  }
}
