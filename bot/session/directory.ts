// What the admission rule reads that moderators change rarely (the studies, their arms and versions, the default
// study's task pool), kept in memory: each admission asks in one round trip whether collection is paused and
// whether any of it changed since it was read (the Setting 'admission.version', counted up in the writer's own
// transaction by triggers on those tables: prisma/migrations/20261207020000_admission_version), from whatever
// process or tool changed it. Before, every admission read it all again (five round trips; bench:bot).
import type { Participant, PrismaClient } from '../../prisma/generated/client.ts';
import { findParticipantsAndSettings } from '../../prisma/participant-store.ts';
import { PAUSED_KEY } from '../../prisma/moderation-store.ts';
import { DEFAULT_STUDY, defaultStudy, type StudyWithArms } from '../../prisma/study-store.ts';
import { chooseStudy, readStudies, studyFor, type Place, type StudyRefusedError } from '../assign.ts';
import { isPaused, pausedIn } from '../moderation.ts';

/** Counted up by the triggers of the migration above on every change to what admission reads. */
export const ADMISSION_VERSION_KEY = 'admission.version';

/** What one admission reads besides the person: the study joined at a place, and whether collection is paused. */
export interface AdmissionReads {
  studyFor(where: Place, now?: Date): Promise<{ study: StudyWithArms; refusal: StudyRefusedError | null }>;
  paused(): Promise<boolean>;
  /** The admission version the studies were read at (unchanged: they are as read); null when not kept. */
  version: string | null;
}

/** The same read from the database each time (callers outside the engine: bot/services.ts). */
export function freshReads(prisma: PrismaClient): AdmissionReads {
  return { studyFor: (where, now) => studyFor(prisma, where, now), paused: () => isPaused(prisma), version: null };
}

interface Snapshot {
  version: string;
  studies: StudyWithArms[];
  defaultStudy: Promise<StudyWithArms> | null;
}

export class AdmissionDirectory {
  /** The studies as read at `version`; the default study once read (created, its pool filled) at that version. */
  private cached: Snapshot | null = null;
  /** The studies being read for a version (see reads). */
  private loading: { version: string; read: Promise<Snapshot> } | null = null;

  constructor(private readonly prisma: () => PrismaClient) {}

  /**
   * The reads of one admission, with the rows of the people `externalIds` names: one round trip, and more only
   * when something changed since the last.
   */
  async reads(externalIds: readonly string[] = []): Promise<AdmissionReads & { people: Map<string, Participant> }> {
    const prisma = this.prisma();
    const { people, settings: rows } = await findParticipantsAndSettings(prisma, externalIds, [
      PAUSED_KEY,
      ADMISSION_VERSION_KEY,
    ]);
    const paused = pausedIn(rows.find((r) => r.key === PAUSED_KEY)?.value);
    const version = versionIn(rows);
    // Read after the version: a change committed meanwhile counts the version up again, so the next admission rereads.
    // One read a version, whoever asks meanwhile (people arriving in the same second, each admission rereading
    // every change, and each default-study pool fill a change: bench:bot at 200 people).
    let snapshot = this.cached;
    if (snapshot?.version !== version) {
      if (this.loading?.version !== version) {
        const loading = {
          version,
          read: readStudies(prisma).then((studies) => ({ version, studies, defaultStudy: null })),
        };
        this.loading = loading;
        loading.read.then(
          (read) => this.loading === loading && ((this.cached = read), (this.loading = null)),
          () => this.loading === loading && (this.loading = null),
        );
      }
      snapshot = await this.loading!.read;
    }
    return {
      people,
      version,
      paused: async () => paused,
      studyFor: async (where, now = new Date()) => {
        const chosen = chooseStudy(snapshot.studies, where, now);
        if (chosen) return chosen;
        // Filling its pool changes the version: the next admission reads the studies again, once.
        // Shared by the admissions of the same moment (a failed read is tried again by the next).
        const read = (snapshot.defaultStudy ??= defaultStudy(prisma, {
          study: snapshot.studies.find((s) => s.name === DEFAULT_STUDY) ?? null,
        }));
        read.catch(() => snapshot.defaultStudy === read && (snapshot.defaultStudy = null));
        return { study: await read, refusal: null };
      },
    };
  }
}

/** The admission version among settings read (its value as text; null never counted up yet, kept as "null"). */
export function versionIn(rows: readonly { key: string; value: unknown }[]): string {
  return JSON.stringify(rows.find((r) => r.key === ADMISSION_VERSION_KEY)?.value ?? null);
}
