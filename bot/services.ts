// What the bot's commands may do besides running sessions: moderation, statistics, deploys, exports and the
// bookkeeping of processed events, each over the database and each retried through an outage. Channels get
// this object and the engine; neither hands them the database, so no command can write a row by itself.
import type { ExportRequestInput, ModeratorExport } from './export/options.ts';
import type { Database } from '../prisma/db.ts';
import type { PolicyVersion } from '../prisma/generated/client.ts';
import { deployPolicyByName, rollbackPolicy } from '../prisma/deployment-store.ts';
import { deletePerson, DEV_PRIVACY_KEY, type DeletionReceipt, type PrivacySettings } from './privacy.ts';
import { withdrawConsent } from '../prisma/privacy-store.ts';
import {
  actorOf,
  ban,
  flagSession,
  openFlags,
  resolveFlag,
  stats,
  unban,
  type Actor,
  type OpenFlag,
  type Stats,
} from './moderation.ts';
import { audit, recordRole, setPaused } from '../prisma/moderation-store.ts';
import { pruneProcessed } from '../prisma/event-store.ts';
import { withDbRetry } from './retry.ts';
import { gateStatsLine, lastGateDecision } from './report/gate.ts';
import {
  armsStudy,
  startExperiment,
  type ExperimentOutcome,
  type RunningExperiment,
  type StopResult,
} from '../prisma/experiment-store.ts';
import {
  excludeFromTraining,
  includeInTraining,
  listParticipants,
  refreshQuality,
  type ParticipantListing,
} from '../prisma/quality-store.ts';
import { armsStatus, stopStudyArms, type ArmsStatus } from './experiments.ts';
import { studyFor, type Place } from './assign.ts';
import {
  offerComparison,
  recordPreference,
  PreferenceError,
  type Comparison,
  type PreferenceChoice,
} from '../prisma/preference-store.ts';
import { findParticipant } from '../prisma/participant-store.ts';
import { admission } from './session/admission.ts';
import { goldShare, setGoldShare } from './gold.ts';
import { DEFAULT_STUDY, type StudyWithArms } from '../prisma/study-store.ts';
import { studyProgress, studyVisibleTo, type StudyProgress } from './study-progress.ts';

export class BotServices {
  constructor(
    private readonly db: Database,
    /** The keyed hash's secret for deletions, the folders whose export files lose a deleted person's rows (bot/privacy.ts). */
    private readonly privacy: PrivacySettings = { key: DEV_PRIVACY_KEY, dirs: [] },
  ) {}

  /** Runs `fn`, retrying while the database is unreachable; `onWaiting` tells the person once. */
  private retry<T>(fn: () => Promise<T>, onWaiting?: () => unknown): Promise<T> {
    return withDbRetry(fn, onWaiting ? { onWaiting: async () => void (await onWaiting()) } : {});
  }

  /** Forgets processed events older than `days` (rows of earlier versions: bot/discord/context.ts ack). */
  async pruneProcessed(days: number): Promise<void> {
    await pruneProcessed(this.db.prisma, new Date(Date.now() - days * 24 * 3600_000));
  }

  /** Statistics as the actor may see them: every guild's for an operator, else their guild's. */
  async stats(onWaiting?: () => unknown, actor?: Actor): Promise<Stats> {
    const s = await this.retry(() => stats(this.db.prisma, actor && !actor.operator ? actor.guildId : null), onWaiting);
    return { ...s, lastGate: gateStatsLine(await this.retry(() => lastGateDecision(this.db.prisma), onWaiting)) };
  }

  /** Records that a person acted as operator or moderator (Participant.role). */
  recordRole(externalId: string, role: 'operator' | 'moderator', onWaiting?: () => unknown): Promise<void> {
    return this.retry(() => recordRole(this.db.prisma, externalId, role), onWaiting);
  }

  /** Open flags the actor may see (their guild's; every guild's for an operator). */
  openFlags(actor: Actor, onWaiting?: () => unknown): Promise<OpenFlag[]> {
    return this.retry(() => openFlags(this.db.prisma, actor), onWaiting);
  }

  resolveFlag(actor: Actor, flagId: string, reason: string, onWaiting?: () => unknown): Promise<void> {
    return this.retry(() => resolveFlag(this.db.prisma, actor, flagId, reason), onWaiting);
  }

  setPaused(actor: string | Actor, paused: boolean, onWaiting?: () => unknown): Promise<void> {
    return this.retry(() => setPaused(this.db.prisma, actor, paused), onWaiting);
  }

  /** Bans a person (everywhere: operators only; else in the actor's guild); returns the threads of the sessions ended. */
  async ban(
    actor: string | Actor,
    externalId: string,
    reason: string | null,
    onWaiting?: () => unknown,
    everywhere = true,
  ): Promise<string[]> {
    const ended = await this.retry(() => ban(this.db.prisma, actor, externalId, reason, everywhere), onWaiting);
    const rows = await this.retry(
      () => this.db.prisma.session.findMany({ where: { id: { in: ended } }, select: { threadId: true } }),
      onWaiting,
    );
    return rows.flatMap((r) => (r.threadId ? [r.threadId] : []));
  }

  unban(actor: string | Actor, externalId: string, onWaiting?: () => unknown): Promise<boolean> {
    return this.retry(() => unban(this.db.prisma, actor, externalId), onWaiting);
  }

  flag(actor: string | Actor, sessionId: string, reason: string, onWaiting?: () => unknown): Promise<string> {
    return this.retry(() => flagSession(this.db.prisma, actor, sessionId, reason), onWaiting);
  }

  /**
   * Deploys a version for new sessions (the announcement is best effort: the switch has committed). An adapter
   * version is loaded into its server first; a refusal is a PolicyError with the server's reason.
   */
  deploy(actor: string | Actor, name: string, onWaiting?: () => unknown, force = false): Promise<PolicyVersion> {
    const a = actorOf(actor);
    return this.retry(
      () =>
        deployPolicyByName(this.db, a.id, name, {
          notify: 'best-effort',
          guildId: a.guildId,
          force,
          operator: a.operator,
          prepare: this.loadFirst,
        }),
      onWaiting,
    );
  }

  /** The `prepare` of every switch asked from Discord (trainer/policies/lifecycle.ts loadBeforeDeploy). */
  private readonly loadFirst = async (v: PolicyVersion): Promise<void> => {
    const { loadBeforeDeploy } = await import('../trainer/policies/lifecycle.ts');
    await loadBeforeDeploy(this.db.prisma, v);
  };

  /** The study an A/B started or stopped at `where` acts on: the one bot/assign.ts would join there. */
  private async studyHere(where: Place, onWaiting?: () => unknown) {
    const { study } = await this.retry(() => studyFor(this.db.prisma, where), onWaiting);
    return study;
  }

  /** Starts an A/B of `candidate` (`share` percent) in the study collecting at `where` (audited). */
  async startExperiment(
    actor: string | Actor,
    where: Place,
    candidate: string,
    share: number,
    onWaiting?: () => unknown,
    force = false,
  ): Promise<RunningExperiment> {
    const a = actorOf(actor);
    const study = await this.studyHere(where, onWaiting);
    return this.retry(
      () => startExperiment(this.db, a.id, { study: study.name, candidate, share, force, operator: a.operator }),
      onWaiting,
    );
  }

  /** How the arms of the study collecting at `where` compare (its running, else latest, A/B). */
  async experimentStatus(where: Place, onWaiting?: () => unknown): Promise<ArmsStatus> {
    const study = await this.studyHere(where, onWaiting);
    return this.retry(() => armsStatus(this.db.prisma, study), onWaiting);
  }

  /** Stops the A/B of the study collecting at `where`; promote deploys its candidate (audited, with the final figures). */
  async stopExperiment(
    actor: string | Actor,
    where: Place,
    outcome: ExperimentOutcome,
    onWaiting?: () => unknown,
    force = false,
  ): Promise<StopResult> {
    const a = actorOf(actor);
    const { name } = await this.studyHere(where, onWaiting);
    return this.retry(
      async () =>
        stopStudyArms(this.db, a.id, await armsStudy(this.db.prisma, name), { outcome, force, operator: a.operator }),
      onWaiting,
    );
  }

  /**
   * The studies the actor may see (bot/study-progress.ts studyVisibleTo) with their progress: the one named, or
   * every open or paused one besides the default study. `guildChannelIds`: the channels of the actor's guild.
   */
  async studyStatus(
    actor: Actor,
    name: string | null,
    guildChannelIds: ReadonlySet<string>,
    onWaiting?: () => unknown,
  ): Promise<{ study: StudyWithArms; progress: StudyProgress }[]> {
    const studies = await this.retry(
      () =>
        this.db.prisma.study.findMany({
          where: name ? { name } : { name: { not: DEFAULT_STUDY }, status: { not: 'closed' } },
          include: { arms: { include: { policyVersion: true } } },
          orderBy: [{ createdAt: 'asc' }, { name: 'asc' }],
        }),
      onWaiting,
    );
    const out = [];
    for (const study of studies.filter((s) => studyVisibleTo(s, actor, guildChannelIds)))
      out.push({ study, progress: await this.retry(() => studyProgress(this.db.prisma, study), onWaiting) });
    return out;
  }

  /** People with their quality (brought up to date first), worst first. */
  async participants(onWaiting?: () => unknown): Promise<ParticipantListing[]> {
    await this.retry(() => refreshQuality(this.db.prisma), onWaiting);
    return this.retry(() => listParticipants(this.db.prisma), onWaiting);
  }

  /** Sets the share of new sessions that are gold checks (audited); returns the share before. */
  async setGoldShare(actor: string, share: number, onWaiting?: () => unknown): Promise<number> {
    const before = await this.retry(() => goldShare(this.db.prisma), onWaiting);
    await this.retry(() => setGoldShare(this.db.prisma, actor, share), onWaiting);
    return before;
  }

  excludeFromTraining(
    actor: string,
    externalId: string,
    reason: string | null,
    onWaiting?: () => unknown,
  ): Promise<boolean> {
    return this.retry(() => excludeFromTraining(this.db.prisma, actor, externalId, reason), onWaiting);
  }

  includeInTraining(actor: string, externalId: string, onWaiting?: () => unknown): Promise<boolean> {
    return this.retry(() => includeInTraining(this.db.prisma, actor, externalId), onWaiting);
  }

  /**
   * Two finished sessions of one task for the person to compare (stored unanswered); null when there are none.
   * The person must be admitted as for a session (bot/session/admission.ts), in the guild asked from.
   */
  async offerComparison(
    externalId: string,
    onWaiting?: () => unknown,
    guildId?: string | null,
  ): Promise<Comparison | null> {
    const a = await this.retry(
      () => admission(this.db.prisma, { externalId }, { guildId }, this.privacy.key),
      onWaiting,
    );
    if ('refused' in a) throw new PreferenceError(a.message);
    if ('needsConsent' in a)
      throw new PreferenceError('Please accept the data-collection notice first (start a session with /task start).');
    if ('needsPlatformId' in a)
      throw new PreferenceError(`Please give your ${a.label} first (start a session with /task start).`);
    return this.retry(() => offerComparison(this.db.prisma, a.participant.id), onWaiting);
  }

  async recordPreference(
    externalId: string,
    preferenceId: string,
    choice: PreferenceChoice,
    onWaiting?: () => unknown,
  ): Promise<void> {
    const p = await this.retry(() => findParticipant(this.db.prisma, externalId), onWaiting);
    if (!p) throw new PreferenceError('Only the person who was shown this comparison can answer it.');
    await this.retry(() => recordPreference(this.db.prisma, preferenceId, p.id, choice), onWaiting);
  }

  rollback(actor: string | Actor, onWaiting?: () => unknown, force = false): Promise<PolicyVersion> {
    const a = actorOf(actor);
    return this.retry(
      () =>
        rollbackPolicy(this.db, a.id, {
          notify: 'best-effort',
          guildId: a.guildId,
          force,
          operator: a.operator,
          prepare: this.loadFirst,
        }),
      onWaiting,
    );
  }

  /**
   * Deletes every trace of the person (bot/privacy.ts): rows, audit mentions, files; returns the receipt, whose
   * thread ids the channel deletes. `names`: what else they are known by (their username), searched for in files.
   */
  deleteParticipant(externalId: string, onWaiting?: () => unknown, requestedBy?: string): Promise<DeletionReceipt> {
    return this.retry(
      () => deletePerson(this.db.prisma, externalId, { ...this.privacy, ...(requestedBy ? { requestedBy } : {}) }),
      onWaiting,
    );
  }

  /** Withdraws consent, keeping the sessions out of every export and training set (audited); false when none was given. */
  withdrawConsent(externalId: string, onWaiting?: () => unknown): Promise<boolean> {
    return this.retry(() => withdrawConsent(this.db.prisma, externalId), onWaiting);
  }

  /**
   * `/mod export`: the same formats and filters as `sweetloop export` (bot/export/options.ts), scoped to the
   * moderator's guild unless they are an operator. A file over `maxBytes` stays on the server under `serverDir`
   * and its path comes back instead (audited either way).
   */
  async exportSessions(
    actor: string | Actor,
    request: ExportRequestInput,
    o: { salt: string; defaultSalt: boolean; maxBytes: number; serverDir: string; chromiumPath?: string },
    onWaiting?: () => unknown,
  ): Promise<ModeratorExport> {
    const a = actorOf(actor);
    const { exportForModerator } = await import('./export/options.ts');
    const scope = a.operator ? {} : { guildIds: a.guildId ? [a.guildId] : [] };
    const result = await this.retry(() => exportForModerator(this.db.prisma, request, { ...o, scope }), onWaiting);
    const bytes = result.delivery === 'server' ? result.bytes : result.files.reduce((n, f) => n + f.data.length, 0);
    await this.retry(
      () =>
        audit(this.db.prisma, a, 'data.export', null, {
          format: request.format,
          sessions: result.sessions,
          bytes,
          delivery: result.delivery,
          scope: a.operator ? 'all' : 'guild',
        }),
      onWaiting,
    );
    return result;
  }
}
