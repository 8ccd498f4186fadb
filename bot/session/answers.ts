// What follows an answer: its evaluation in the engine's scoring pool (stored once; a score another process
// stored first stands), and the person's rating and comment.
import { UniqueViolationError, toDatabaseError } from '../../prisma/errors.ts';
import { findParticipant } from '../../prisma/participant-store.ts';
import { outcomeOf, recordEvaluation, type StudyCompletion } from '../../prisma/evaluation-store.ts';
import { rateOwnSession, recordComment } from '../../prisma/rating-store.ts';
import { taskContent } from '../../prisma/task-store.ts';
import type { EvaluationOutcome } from '../../tasks/scorer.ts';
import type { EngineContext } from './context.ts';
import type { ScoringState } from './scoring.ts';
import { TurnRejectedError, type EvaluatedSession, type Hooks, type Person } from './types.ts';

/**
 * The study's completion code when this was the person's last session of it: they reached its sessions per
 * person; without such a cap, every answered session may be their last, so each shows it.
 */
function completionCodeOf(c: StudyCompletion): string | null {
  if (!c.completionCode) return null;
  if (c.maxSessionsPerPerson === null) return c.completionCode;
  return c.answered >= c.maxSessionsPerPerson ? c.completionCode : null;
}

export class Answers {
  constructor(private readonly ctx: EngineContext) {}

  /**
   * Scores the answer of an answered session (once; later calls return the stored evaluation), in the engine's
   * bounded scoring pool (scoring.ts): `onState` hears whether it waits, and how many answers are ahead, or is
   * being scored. Stored inside the pool's job, so an engine that closes waits for every score it started.
   */
  evaluate(sessionId: string, hooks?: Hooks, onState?: (s: ScoringState) => void): Promise<EvaluatedSession> {
    const { ctx } = this;
    return ctx.sessionLock.run(`eval:${sessionId}`, async () => {
      // An answer this process stored is in memory with its evaluation, if it stored one (session-cache.ts); one
      // stored elsewhere meanwhile stands (storeEvaluation).
      const kept = ctx.sessions.answeredHere(sessionId);
      const s = kept
        ? { ...kept, evaluation: null }
        : await ctx.retry(
            () => ctx.prisma.session.findUniqueOrThrow({ where: { id: sessionId }, include: { evaluation: true } }),
            hooks,
          );
      if (s.status !== 'answered') throw new TurnRejectedError('This session has no answer to evaluate.');
      const task = await ctx.task(s.taskId, hooks);
      const answer = s.answer ?? '';
      const stored = ctx.sessions.outcome(sessionId) ?? (s.evaluation ? outcomeOf(s.evaluation) : undefined);
      const outcome: { outcome: EvaluationOutcome; completion?: StudyCompletion } = stored
        ? { outcome: stored }
        : await ctx.scoring.run(async () => {
            const scored = await ctx.deps.evaluate(taskContent(task), answer);
            return this.storeEvaluation(sessionId, scored, hooks);
          }, onState);
      if (!stored) ctx.sessions.evaluated(sessionId, outcome.outcome);
      // Read with the evaluation where this call stored it; else on its own.
      const completionCode = outcome.completion
        ? completionCodeOf(outcome.completion)
        : await this.completionCode(s, hooks);
      return {
        sessionId,
        kind: task.kind,
        answer,
        outcome: outcome.outcome,
        ...(completionCode ? { completionCode } : {}),
      };
    });
  }

  /** The study's completion code for this session (completionCodeOf), read on its own: the evaluation was stored before. */
  private async completionCode(
    s: { studyId: string | null; participantId: string },
    hooks?: Hooks,
  ): Promise<string | null> {
    if (!s.studyId) return null;
    const { ctx } = this;
    const study = await ctx.retry(
      () =>
        ctx.prisma.study.findUnique({
          where: { id: s.studyId! },
          select: { completionCode: true, maxSessionsPerPerson: true },
        }),
      hooks,
    );
    if (!study) return null;
    const answered =
      study.completionCode && study.maxSessionsPerPerson !== null
        ? await ctx.retry(
            () =>
              ctx.prisma.session.count({
                where: { studyId: s.studyId, participantId: s.participantId, status: 'answered' },
              }),
            hooks,
          )
        : 0;
    return completionCodeOf({ ...study, answered });
  }

  /** Stores a score; when another process stored this answer's first (a second bot on the same database), that one stands. */
  private async storeEvaluation(
    sessionId: string,
    outcome: EvaluationOutcome,
    hooks?: Hooks,
  ): Promise<{ outcome: EvaluationOutcome; completion?: StudyCompletion }> {
    const { ctx } = this;
    let completion: StudyCompletion;
    try {
      completion = await ctx.retry(
        () => recordEvaluation(ctx.prisma, sessionId, outcome, ctx.options.ratingWeight),
        hooks,
      );
    } catch (err) {
      const e = toDatabaseError(err);
      if (!(e instanceof UniqueViolationError)) throw e;
      const stored = await ctx.retry(() => ctx.prisma.evaluation.findUniqueOrThrow({ where: { sessionId } }), hooks);
      ctx.deps.log?.warn({ session: sessionId }, 'this answer was scored elsewhere meanwhile: keeping that score');
      return { outcome: outcomeOf(stored) };
    }
    ctx.deps.log?.info({ session: sessionId, score: outcome.score, success: outcome.success }, 'session evaluated');
    return { outcome, completion };
  }

  /** Stores the person's 1-5 rating of their answered session (a second rating replaces the first). */
  async rate(sessionId: string, rater: Person, value: number, hooks?: Hooks): Promise<void> {
    const { ctx } = this;
    if (!Number.isInteger(value) || value < 1 || value > 5)
      throw new TurnRejectedError('A rating is a whole number from 1 to 5.');
    // Checked and written in one statement: the checks' answers come back with it, in the order they were asked.
    const s = await ctx.retry(
      () => rateOwnSession(ctx.prisma, sessionId, rater.externalId, value, ctx.options.ratingWeight),
      hooks,
    );
    if (!s) throw new TurnRejectedError('This session no longer exists.');
    if (s.owner !== rater.externalId)
      throw new TurnRejectedError('Only the person who took part in this session can rate it.');
    if (s.status !== 'answered') throw new TurnRejectedError('Only a finished session can be rated.');
  }

  async comment(sessionId: string, rater: Person, comment: string, hooks?: Hooks): Promise<void> {
    const { ctx } = this;
    const text = comment.trim();
    if (text.length > 1000)
      throw new TurnRejectedError(`Your comment is ${text.length} characters long; the limit is 1000.`);
    await ctx.retry(async () => {
      const p = await findParticipant(ctx.prisma, rater.externalId);
      if (!p) throw new TurnRejectedError('Please rate the session first.');
      if (!(await recordComment(ctx.prisma, sessionId, p.id, text)))
        throw new TurnRejectedError('Please rate the session with the buttons first, then add a comment.');
    }, hooks);
  }
}
