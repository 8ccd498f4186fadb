// Each session's state in the process that runs it, written through: what the engine stores it also applies here,
// so a turn reads nothing it wrote itself (a reply and the agent's answer to it read the session from memory).
// The database stays the record: every turn is stored before it is applied here and before it is shown, so a
// process killed at any point loses only this copy, and its successor reads the database. What another process
// changes meanwhile (a moderator ends the session, /privacy delete) is caught where it matters: turns are appended
// only to an active session, in the same statement (prisma/session-store.ts), and a refused write drops the copy.
import type { Session, Task, Turn } from '../../prisma/generated/client.ts';
import type { EvaluationOutcome } from '../../tasks/scorer.ts';

/** A session as the engine works on it: with its task and its turns in order. */
export type SessionWithTurns = Session & { task: Task; turns: Turn[] };

/** Sessions kept at most: a process running more starts over (each is read again once). */
const CAPACITY = 10_000;

interface Entry {
  s: SessionWithTurns;
  /** The answer's evaluation, once this process stored it. */
  outcome?: EvaluationOutcome;
  /** This process stored the answer: no evaluation of it exists but one this process stored, or another's it finds on storing its own. */
  answeredHere?: boolean;
}

export class SessionCache {
  private readonly entries = new Map<string, Entry>();
  /**
   * Counts every write applied (or meant for a session not kept): a session read from the database is kept only
   * if nothing was written since the read began (readAt), so a read that crossed a write never hides it.
   */
  private writes = 0;

  /** Where a read from the database begins (see keepRead). */
  readAt(): number {
    return this.writes;
  }

  /** Keeps a session read from the database since `readAt`, unless anything was written meanwhile; returns what is kept now, or the read. */
  keepRead(s: SessionWithTurns, readAt: number): SessionWithTurns {
    if (readAt === this.writes && !this.entries.has(s.id)) this.set(s);
    return this.get(s.id) ?? s;
  }

  get(sessionId: string): SessionWithTurns | undefined {
    return this.entries.get(sessionId)?.s;
  }

  /** The evaluation this process stored for the session's answer, if it did. */
  outcome(sessionId: string): EvaluationOutcome | undefined {
    return this.entries.get(sessionId)?.outcome;
  }

  /** Keeps the session as read or written (its turns in index order). */
  set(s: SessionWithTurns): void {
    if (!this.entries.has(s.id) && this.entries.size >= CAPACITY) this.entries.clear();
    const prior = this.entries.get(s.id);
    this.entries.set(s.id, { ...prior, s });
  }

  /** Applies a write of the session's own fields (a copy: what callers hold stays as they read it). */
  patch(sessionId: string, fields: Partial<Session>): void {
    this.writes++;
    const e = this.entries.get(sessionId);
    if (e) e.s = { ...e.s, ...fields };
  }

  /** Applies a turn appended (with the session's fields that the same statement wrote). */
  appendTurn(sessionId: string, turn: Turn, fields: Partial<Session>): void {
    this.writes++;
    const e = this.entries.get(sessionId);
    if (!e) return;
    e.s = {
      ...e.s,
      ...fields,
      turnCount: turn.role === 'agent' ? e.s.turnCount + 1 : e.s.turnCount,
      turns: [...e.s.turns, turn],
    };
    if (fields.status === 'answered') e.answeredHere = true;
  }

  /** The session, when this process stored its answer (see Entry.answeredHere). */
  answeredHere(sessionId: string): SessionWithTurns | undefined {
    const e = this.entries.get(sessionId);
    return e?.answeredHere ? e.s : undefined;
  }

  /** Applies a turn's channel message id (it was shown). */
  turnShown(turnId: string, externalMessageId: string, sessionId?: string): void {
    this.writes++;
    const entries = sessionId ? [this.entries.get(sessionId)] : [...this.entries.values()];
    for (const e of entries) {
      if (!e?.s.turns.some((t) => t.id === turnId)) continue;
      e.s = { ...e.s, turns: e.s.turns.map((t) => (t.id === turnId ? { ...t, externalMessageId } : t)) };
    }
  }

  evaluated(sessionId: string, outcome: EvaluationOutcome): void {
    const e = this.entries.get(sessionId);
    if (e) e.outcome = outcome;
  }

  /** Drops the session: the next step reads it from the database. */
  forget(sessionId: string): void {
    this.writes++;
    this.entries.delete(sessionId);
  }
}
