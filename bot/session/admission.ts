// Who may take part, and starting a session: one admission rule (bans, the ban a deleted person keeps, consent,
// a pause, the study joined here) used by every channel and service, then the checks and choices that create a
// session (its task and arm from the study, bot/assign.ts).
import type { TaskKind } from '../../tasks/model.ts';
import { collaboratorView, type CollaboratorView } from '../../tasks/protocol.ts';
import type { Participant, PolicyVersion, Prisma, PrismaClient } from '../../prisma/generated/client.ts';
import {
  acceptConsent,
  findParticipant,
  findParticipants,
  settingsAndActiveSession,
} from '../../prisma/participant-store.ts';
import { attachThread, createSession } from '../../prisma/session-store.ts';
import { acceptStudyConsent, DEFAULT_STUDY, lacksConsent, type StudyWithArms } from '../../prisma/study-store.ts';
import { taskContent } from '../../prisma/task-store.ts';
import { hasConsent } from '../../prisma/cohorts.ts';
import { assignTask, neededKind, StudyRefusedError, type StudyRefusalReason } from '../assign.ts';
import { goldShareIn, goldSource } from '../gold.ts';
import { sessionLimitRefusal } from '../limits.ts';
import { isBannedIn } from '../moderation.ts';
import { audit, auditInsert, GOLD_SHARE_KEY } from '../../prisma/moderation-store.ts';
import {
  hasPayAccount,
  isPayPlatform,
  PAY_PLATFORMS,
  savePayAccount,
  type PayPlatform,
} from '../../prisma/pay-account-store.ts';
import { DEV_PRIVACY_KEY, erasedId } from '../privacy.ts';
import type { EngineContext } from './context.ts';
import { ADMISSION_VERSION_KEY, freshReads, versionIn, type AdmissionDirectory } from './directory.ts';
import { RefusedError, type Hooks, type Person, type StartedSession, type Where } from './types.ts';

/** A study's own consent text, to show and then accept by its version (absent: the bot's configured notice). */
export interface StudyConsent {
  studyId: string;
  study: string;
  version: number;
  text: string;
}

/** May the person take part: admitted (in this study), asked to accept a consent text first, or refused with a reason. */
export type Admission =
  /** `version`: the admission version the study was read at (bot/session/directory.ts), where it is kept. */
  | { ok: true; participant: Participant; study: StudyWithArms; version?: string }
  | { needsConsent: true; consent?: StudyConsent }
  /** The study pays through a recruiting platform: the person gives their id there once (setPlatformId). */
  | { needsPlatformId: true; platform: PayPlatform; label: string; study: string }
  | { refused: true; reason: 'banned' | 'paused' | StudyRefusalReason; message: string };

/**
 * The admission rule. Refused when the person is banned (everywhere, or in the guild asked from), also under the
 * keyed hash a deletion keeps them as (bot/privacy.ts erasedId, with the secret `erasureKey`); else asked for
 * consent when they have not given it (or withdrew it: prisma/cohorts.ts hasConsent, the rule exports and training
 * read), or have not accepted the current version of the consent text of the study
 * joined here (bot/assign.ts studyFor); else refused while collection is paused, or while that study is paused,
 * closed or not open yet; else admitted in that study.
 */
export async function admission(
  prisma: PrismaClient,
  person: Pick<Person, 'externalId'>,
  where: Pick<Where, 'guildId' | 'channelId'>,
  erasureKey: string,
  directory?: AdmissionDirectory,
): Promise<Admission> {
  // The person's row and the one a deletion keeps under the keyed hash, in one query (every admission reads both),
  // alongside what the admission reads besides (from memory where the engine keeps it: directory.ts).
  const hashed = erasedId(erasureKey, person.externalId);
  const [rows, reads] = directory
    ? await directory.reads([person.externalId, hashed]).then((r) => [r.people, r] as const)
    : await Promise.all([findParticipants(prisma, [person.externalId, hashed]), freshReads(prisma)]);
  const p = rows.get(person.externalId) ?? null;
  const erased = rows.get(hashed) ?? null;
  if ((p && isBannedIn(p, where.guildId)) || (erased && isBannedIn(erased, where.guildId))) {
    return { refused: true, reason: 'banned', message: 'You are not allowed to take part in sessions.' };
  }
  const { study, refusal } = await reads.studyFor(where);
  const consent: StudyConsent | undefined = study.consentText
    ? { studyId: study.id, study: study.name, version: study.consentVersion, text: study.consentText }
    : undefined;
  if (!p || !hasConsent(p)) return consent ? { needsConsent: true, consent } : { needsConsent: true };
  if (
    consent &&
    !(await prisma.consentAcceptance.findUnique({
      where: { participantId_studyId_version: { participantId: p.id, studyId: study.id, version: consent.version } },
    }))
  ) {
    return { needsConsent: true, consent };
  }
  if (await reads.paused())
    return {
      refused: true,
      reason: 'paused',
      message: 'Collection is paused by the moderators right now. Please try again later.',
    };
  if (refusal) return { refused: true, reason: refusal.reason, message: refusal.message };
  const platform = study.participantIdPlatform;
  if (platform && isPayPlatform(platform) && !(await hasPayAccount(prisma, p.id, platform))) {
    return { needsPlatformId: true, platform, label: PAY_PLATFORMS[platform].label, study: study.name };
  }
  return { ok: true, participant: p, study, ...(reads.version !== null ? { version: reads.version } : {}) };
}

/** The engine's door: who a person is, their consent, the admission rule, and starting their session. */
export class Admissions {
  constructor(private readonly ctx: EngineContext) {}

  participant(externalId: string, hooks?: Hooks): Promise<Participant | null> {
    return this.ctx.retry(() => findParticipant(this.ctx.prisma, externalId), hooks);
  }

  /**
   * Records the person's acceptance of the consent text, with its audit row (every channel alike): the bot's
   * notice, or the version of a study's text that was shown (`consent`, from the admission).
   */
  acceptConsent(
    person: Person,
    consent?: Pick<StudyConsent, 'studyId' | 'version'>,
    hooks?: Hooks,
  ): Promise<Participant> {
    const { ctx } = this;
    return ctx.retry(async () => {
      // Written with the acceptance, in its statement.
      const row = auditInsert(person.externalId, 'consent.accept', null, {
        channel: ctx.options.channel,
        ...(consent ? { studyId: consent.studyId, version: consent.version } : {}),
      });
      return consent
        ? acceptStudyConsent(ctx.prisma, person.externalId, person.displayName, consent.studyId, consent.version, row)
        : acceptConsent(ctx.prisma, person.externalId, person.displayName, row);
    }, hooks);
  }

  /**
   * Stores the person's participant id on a study's recruiting platform (pay data), audited without the id; a
   * StudyError names what a valid id looks like. The person has accepted consent (their row exists).
   */
  setPlatformId(person: Person, platform: PayPlatform, id: string, hooks?: Hooks): Promise<void> {
    const { ctx } = this;
    return ctx.retry(async () => {
      const p = await findParticipant(ctx.prisma, person.externalId);
      if (!p) throw new RefusedError('no-consent', 'Please accept the data-collection notice first.');
      await savePayAccount(ctx.prisma, p.id, platform, id);
      await audit(ctx.prisma, person.externalId, 'pay-account.set', null, { channel: ctx.options.channel, platform });
    }, hooks);
  }

  /**
   * The admission rule for this person here (deletions made without a configured key use the development one).
   * On Discord a study without a consent text of its own takes nobody (it was made where no bot was configured).
   */
  async admission(
    person: Pick<Person, 'externalId'>,
    where: Pick<Where, 'guildId' | 'channelId'> = {},
    hooks?: Hooks,
  ): Promise<Admission> {
    const key = this.ctx.options.erasureKey ?? DEV_PRIVACY_KEY;
    const a = await this.ctx.retry(() => admission(this.ctx.prisma, person, where, key, this.ctx.directory), hooks);
    if ('ok' in a && lacksConsent(a.study, this.ctx.options.channel === 'discord')) {
      this.ctx.deps.log?.warn(
        { study: a.study.name },
        'a study without a consent text was joined on Discord; refused (set one with sweetloop study consent)',
      );
      return {
        refused: true,
        reason: 'study-not-open',
        message: 'This study is not open on Discord yet: it has no consent text. Please try again later.',
      };
    }
    return a;
  }

  /**
   * Checks everything and creates the session; the caller shows the hidden information, then calls agentStep.
   * `admitted`: the admission the caller has just made for this person here (not made again; what may have
   * changed since about the study is read again under its lock, bot/assign.ts assignTask).
   */
  start(
    person: Person,
    kindWanted: TaskKind | null,
    where: Where = {},
    hooks?: Hooks,
    admittedNow?: Admission,
  ): Promise<StartedSession> {
    const { ctx } = this;
    const prisma = ctx.prisma;
    return ctx.personLock.run(person.externalId, async () => {
      const admitted = admittedNow ?? (await this.admission(person, where, hooks));
      if ('refused' in admitted) throw new RefusedError(admitted.reason, admitted.message);
      if ('needsConsent' in admitted)
        throw new RefusedError('no-consent', 'Please accept the data-collection notice first.');
      if ('needsPlatformId' in admitted)
        throw new RefusedError('no-platform-id', `This study needs your ${admitted.label} first.`);
      const { participant, study } = admitted;
      // A study's arms play its sessions; the default study plays the deployed version.
      let deployed: PolicyVersion | null = null;
      if (study.arms.length === 0) {
        deployed = ctx.deps.policies.deployed ?? (await ctx.deps.policies.refresh());
        if (!deployed) throw new RefusedError('no-policy', 'No agent is deployed yet. Please try again later.');
      }
      const kind = kindWanted ?? study.kind ?? (await ctx.retry(() => neededKind(prisma, study.id), hooks));
      if (kind === 'frontend' && !ctx.deps.render) {
        throw new RefusedError('no-renderer', 'Frontend sessions need the page renderer, which is not available here.');
      }
      // Under the study's lock, one read says whether the person has a session running, whether the study is as
      // admitted and what share of sessions are gold checks (the running session was a read of its own before).
      let goldShare: number | undefined;
      const limits = ctx.options.limits;
      const unchanged = async (tx: Prisma.TransactionClient): Promise<boolean> => {
        const { settings: rows, activeSessionId } = await settingsAndActiveSession(tx, participant.id, [
          ADMISSION_VERSION_KEY,
          GOLD_SHARE_KEY,
        ]);
        if (activeSessionId) {
          throw new RefusedError(
            'active-session',
            'You already have a session running. Finish it, or end it with /task stop.',
            activeSessionId,
          );
        }
        if (limits) {
          const refusal = await sessionLimitRefusal(tx, participant.id, limits);
          if (refusal) throw new RefusedError('limit', refusal);
        }
        goldShare = goldShareIn(rows);
        return admitted.version !== undefined && versionIn(rows) === admitted.version;
      };
      const { session, playing, experimentId, goldSourceId } = await ctx
        .retry(
          () =>
            ctx.studyLock.run(study.id, () =>
              assignTask(
                prisma,
                study,
                participant.id,
                kind,
                async (tx, pick, current) => {
                  // The admission checked the person accepted the study's current consent text; a new version stored
                  // since then is read first. The session keeps the version accepted (exports carry it).
                  if (current.consentText && current.consentVersion !== study.consentVersion) {
                    throw new RefusedError(
                      'no-consent',
                      'The consent text of this study has changed. Please run /task start again to read the new version.',
                    );
                  }
                  // In the default study, now and then a gold check replays a known session's agent (bot/gold.ts);
                  // otherwise the study's arm plays (during an A/B, control or candidate; bot/assign.ts), or the
                  // deployed version where it has none. The session keeps what it was given.
                  const goldSourceId =
                    study.name === DEFAULT_STUDY && kind === 'backend'
                      ? await goldSource(tx, pick.taskId, Math.random(), goldShare)
                      : null;
                  const experimentId = goldSourceId ? null : pick.experimentId;
                  // An A/B may have begun or ended since the study was read: the pick, made under its lock, decides.
                  const playing =
                    pick.arm?.policyVersion ??
                    deployed ??
                    ctx.deps.policies.deployed ??
                    (await ctx.deps.policies.refresh());
                  if (!playing)
                    throw new RefusedError('no-policy', 'No agent is deployed yet. Please try again later.');
                  const session = await createSession(tx, {
                    taskId: pick.taskId,
                    participantId: participant.id,
                    policyVersionId: goldSourceId ? null : playing.id,
                    ...(experimentId ? { experimentId } : {}),
                    ...(goldSourceId ? { goldSourceId } : {}),
                    studyId: study.id,
                    consentVersion: study.consentText ? study.consentVersion : null,
                    channel: ctx.options.channel,
                    simulated: ctx.options.channel === 'simulated',
                    guildId: where.guildId ?? null,
                    channelId: where.channelId ?? null,
                  });
                  return { session, playing, experimentId, goldSourceId };
                },
                unchanged,
              ),
            ),
          hooks,
        )
        .catch((err: unknown) => {
          if (err instanceof StudyRefusedError) throw new RefusedError(err.reason, err.message);
          throw err;
        });
      // Kept in memory from its first write on (session-cache.ts): its turns are read from there.
      const task = await ctx.task(session.taskId, hooks);
      ctx.sessions.set({ ...session, task, turns: [] });
      const taskId = session.taskId;
      const content = taskContent(task);
      const view = collaboratorView(content);
      const started: StartedSession = {
        sessionId: session.id,
        taskId,
        kind,
        description: content.description,
        policyName: playing.name,
        blind: study.arms.length > 1 || goldSourceId !== null,
        view,
      };
      if (view.kind === 'frontend') started.targetPng = await ctx.deps.render!(view.targetHtml);
      ctx.deps.log?.info(
        {
          session: session.id,
          kind,
          task: taskId,
          study: study.name,
          policy: goldSourceId ? null : playing.name,
          experiment: experimentId,
          gold: goldSourceId,
        },
        'session started',
      );
      return started;
    });
  }

  /** Records where the session is shown (a Discord thread). */
  async attachThread(sessionId: string, threadId: string, hooks?: Hooks): Promise<void> {
    await this.ctx.retry(() => attachThread(this.ctx.prisma, sessionId, threadId), hooks);
    this.ctx.sessions.patch(sessionId, { threadId });
  }

  /** Re-shows the hidden information of a session (e.g. on /task status). */
  async hiddenInfo(sessionId: string): Promise<{ view: CollaboratorView; targetPng?: Buffer }> {
    const s = await this.ctx.retry(() =>
      this.ctx.prisma.session.findUniqueOrThrow({ where: { id: sessionId }, include: { task: true } }),
    );
    const view = collaboratorView(taskContent(s.task));
    if (view.kind === 'frontend' && this.ctx.deps.render)
      return { view, targetPng: await this.ctx.deps.render(view.targetHtml) };
    return { view };
  }
}
