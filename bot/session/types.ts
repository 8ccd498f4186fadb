// What the session engine's callers see: its settings and dependencies, the people and views it works with,
// what its steps return, and the two errors whose message is meant for the person.
import type { Agent } from '../../tasks/agent.ts';
import type { TaskContent, TaskKind } from '../../tasks/model.ts';
import type { AgentMessageView, CollaboratorView, ParsedAgentMessage } from '../../tasks/protocol.ts';
import type { Logger } from '../../tasks/logger.ts';
import type { Database } from '../../prisma/db.ts';
import type { PolicyVersion, Session, Turn } from '../../prisma/generated/client.ts';
import type { PolicyWatcher } from '../deploy-watch.ts';
import type { EvaluationOutcome } from '../../tasks/scorer.ts';
import type { Limits } from '../limits.ts';
import type { StudyRefusalReason } from '../assign.ts';
import type { ScoringState } from './scoring.ts';

export type Channel = 'discord' | 'console' | 'simulated';

// How a session's answer is scored and how pages are shown: the engine receives these as functions, so the
// Discord bot, the console and the tests share one engine while the composition root picks the real parts.
export type Evaluate = (task: TaskContent, answer: string) => Promise<EvaluationOutcome>;

/** Renders an HTML page to a PNG screenshot. */
export type RenderPage = (html: string) => Promise<Buffer>;

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
  /**
   * How long what a session owes (the agent's turn, showing it, the result or the rating prompt) may wait with
   * nobody working on it before it is overdue: counted on /metrics and readiness, and picked up by the sweep
   * (default 30 s: long enough for a step to be handed from one piece of work to the next).
   */
  overdueMs?: number;
  /** How long the agent may write before the person sees it typing (default TYPING_AFTER_MS in turns.ts, 2 s). */
  typingAfterMs?: number;
  /** Per-person limits (bot/limits.ts); unset: none. */
  limits?: Limits;
  /** Answers scored at once (sandboxes or pages); the others wait in arrival order (scoring.ts). Default 2. */
  scoringPool?: number;
  /**
   * Secret of the keyed hash a deleted person is kept under (bot/privacy.ts), so that their ban still applies;
   * unset: the development key bot/services.ts deletes with when none is configured.
   */
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

export type RefusalReason =
  | 'no-consent'
  | 'no-platform-id'
  | 'banned'
  | 'paused'
  | 'active-session'
  | 'no-policy'
  | 'no-renderer'
  | 'limit'
  | StudyRefusalReason;

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

/** Where a session is asked for: the Discord guild and channel (none on the console). */
export interface Where {
  guildId?: string | null | undefined;
  channelId?: string | null | undefined;
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
  /** The answer waits for a place in the scoring pool (`ahead` answers before it), or is being scored now. */
  showScoring?(sessionId: string, state: ScoringState): Promise<void>;
  /**
   * Shows the answer's score with the rating offered in the same message, where a channel can (Discord: one
   * post, not two, against the bot's 50 requests a second). Without it: showResult, then askRating.
   */
  showResultWithRating?(result: EvaluatedSession): Promise<void>;
  /** Offers the 1-5 rating (buttons on Discord; the console asks after advance() returns). */
  askRating(sessionId: string): Promise<void>;
  /** A short notice (the agent failed, the session ended). */
  notice(text: string): Promise<void>;
  /** The agent is working (Discord's typing indicator). */
  typing?(): Promise<void>;
}

/** How a channel shows a session it was handed no message for (after a restart, by the sweep). */
export interface ResumedView {
  view: SessionView;
  /** What tells its person to wait (the agent past its deadline, the database away), as in a live turn. */
  hooks?: Hooks;
}

/** Where a session stands after advance(): whose move it is ('ended' also when the engine closed meanwhile). */
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
  /** The study's completion code, when this was the person's last session of it (bot/session/answers.ts). */
  completionCode?: string;
}

export type PendingWork =
  | { kind: 'agent'; session: Session }
  | { kind: 'show'; session: Session; turn: Turn }
  | { kind: 'evaluate'; session: Session };
