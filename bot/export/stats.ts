// The running counts of an export (sessions, turns, ratings, sources), kept apart from the card that prints them.
import type { ExportRecord } from './record.ts';
import { isSimulatedSession } from '../../prisma/cohorts.ts';

/** Running counts over the exported records; memory grows with distinct participants and policies only. */
export class ExportStats {
  sessions = 0;
  turns = { agent: 0, human: 0, system: 0 };
  ratings = 0;
  ratingHistogram = [0, 0, 0, 0, 0];
  evaluated = 0;
  successes = 0;
  simulated = 0;
  withComments = 0;
  byKind = new Map<string, number>();
  bySplit = new Map<string, number>();
  bySource = new Map<string, number>();
  byPolicy = new Map<string, number>();
  private participants = new Set<string>();
  private raters = new Set<string>();
  firstStart: string | null = null;
  lastStart: string | null = null;
  /** Agent turns by what was stored of their exact tokens (ExportTurn.tokenRecording; 'unknown': stored before recording). */
  tokenRecording = { recorded: 0, off: 0, unavailable: 0, unknown: 0 };

  add(r: ExportRecord): void {
    this.sessions++;
    for (const t of r.turns) {
      this.turns[t.role]++;
      if (t.role === 'agent') this.tokenRecording[t.tokenRecording ?? 'unknown']++;
    }
    for (const x of r.ratings) {
      this.ratings++;
      if (x.value >= 1 && x.value <= 5) this.ratingHistogram[x.value - 1]!++;
      this.raters.add(x.rater);
      if (x.comment) this.withComments++;
    }
    if (r.evaluation) {
      this.evaluated++;
      if (r.evaluation.success) this.successes++;
    }
    if (r.session.simulated) this.simulated++;
    bump(this.byKind, r.task.kind);
    bump(this.bySplit, r.task.split);
    bump(this.bySource, isSimulatedSession(r.session, r.participant) ? 'simulated' : 'human');
    bump(this.byPolicy, r.policyVersion?.name ?? '(none)');
    this.participants.add(r.participant.pseudonym);
    if (this.firstStart === null || r.session.startedAt < this.firstStart) this.firstStart = r.session.startedAt;
    if (this.lastStart === null || r.session.startedAt > this.lastStart) this.lastStart = r.session.startedAt;
  }

  get totalTurns(): number {
    return this.turns.agent + this.turns.human + this.turns.system;
  }
  get participantCount(): number {
    return this.participants.size;
  }
  get raterCount(): number {
    return this.raters.size;
  }
}

function bump(m: Map<string, number>, k: string): void {
  m.set(k, (m.get(k) ?? 0) + 1);
}
