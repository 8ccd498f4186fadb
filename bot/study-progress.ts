// A study's progress, as `sweetloop study show` and `/mod study status` print it (one formatting rule, formatStudy):
// tasks complete, partial and untouched, sessions per arm, people active now, critic pairs, the median active time
// of answered sessions (tasks/study-pay.ts), and when the study should be full at the rate sessions are being
// answered. Also who may see a study on Discord (studyVisibleTo).
import type { PrismaClient, Study } from '../prisma/generated/client.ts';
import type { StudyWithArms } from '../prisma/study-store.ts';
import {
  medianActiveMinutes,
  studyAnsweredCounts,
  studyPeopleActive,
  studyRewardCounts,
  studySessionCells,
} from '../prisma/study-stats.ts';
import { deployedPolicy, servesOnlyStarter } from '../prisma/policy-store.ts';
import { STARTER_ONLY_WARNING } from './bootstrap.ts';
import { IDLE_GAP_MS } from '../tasks/study-pay.ts';
import { rewardPairCount } from '../trainer/pairs.ts';
import { formatAmount } from './studies.ts';
import type { Actor } from './moderation.ts';

/** The recent window whose answered sessions give the rate of the projection. */
export const PROJECTION_WINDOW_MS = 24 * 3600_000;
/** Fewer answered sessions than this (in the window, else since the first session) say too little to project from. */
export const PROJECTION_MIN_SESSIONS = 3;

export type Projection =
  | { state: 'no-k' }
  | { state: 'complete' }
  | { state: 'not-enough-data'; remaining: number }
  | { state: 'projected'; remaining: number; at: Date; perDay: number; basis: 'last-24h' | 'since-first' };

/** The window whose answered sessions give the projection's recent rate: (from, to], counted in the database. */
export function projectionWindow(now: Date, windowMs = PROJECTION_WINDOW_MS): { from: Date; to: Date } {
  return { from: new Date(now.getTime() - windowMs), to: now };
}

/**
 * When the study's remaining slots (tasks x k - answered) should be answered: at the rate of the last 24 hours
 * when at least PROJECTION_MIN_SESSIONS sessions were answered in them (`recent`, answered in projectionWindow),
 * else at the rate since the study's first session started when that many were answered in all, else not enough
 * data yet.
 */
export function projectCompletion(o: {
  remaining: number | null;
  answered: number;
  recent: number;
  firstStartedAt: Date | null;
  now: Date;
  windowMs?: number;
}): Projection {
  if (o.remaining === null) return { state: 'no-k' };
  if (o.remaining <= 0) return { state: 'complete' };
  const windowMs = o.windowMs ?? PROJECTION_WINDOW_MS;
  const now = o.now.getTime();
  let perMs: number;
  let basis: 'last-24h' | 'since-first';
  if (o.recent >= PROJECTION_MIN_SESSIONS) [perMs, basis] = [o.recent / windowMs, 'last-24h'];
  else if (o.answered >= PROJECTION_MIN_SESSIONS && o.firstStartedAt && now > o.firstStartedAt.getTime())
    [perMs, basis] = [o.answered / (now - o.firstStartedAt.getTime()), 'since-first'];
  else return { state: 'not-enough-data', remaining: o.remaining };
  return {
    state: 'projected',
    remaining: o.remaining,
    at: new Date(now + o.remaining / perMs),
    perDay: perMs * 24 * 3600_000,
    basis,
  };
}

export interface StudyProgress {
  tasks: number;
  /** Tasks with k answered sessions. */
  complete: number;
  /** Tasks with at least one active or answered session, not complete. */
  partial: number;
  untouched: number;
  answered: number;
  active: number;
  /** Per arm (policy version name): answered and active sessions. */
  arms: { policy: string; share: number; answered: number; active: number }[];
  /** Different people with a session running now. */
  peopleActive: number;
  /**
   * The critic's Bradley-Terry pairs from rewards (trainer/pairs.ts rewardPairs): per task, its best answered
   * session against each one rewarded lower. The official evaluate_code.py forms these only on tasks whose best
   * succeeded (docs/training.md).
   */
  criticPairs: number;
  /** Median active minutes of the answered sessions (tasks/study-pay.ts activeMs); null before the first. */
  medianActiveMinutes: number | null;
  projection: Projection;
  /** The deployed version's name, which serves a study without arms; null when none is deployed. */
  deployed: string | null;
  /** Every version serving the study (its arms, else the deployed one) is the built-in starter (servesOnlyStarter). */
  starterOnly: boolean;
}

/**
 * Counted in the database (prisma/study-stats.ts): sessions by task, version and status, rewards by task (their
 * pairs counted by trainer/pairs.ts rewardPairCount), people active, and the median active time of the answered
 * sessions (medianActiveMinutes).
 */
export async function studyProgress(
  prisma: PrismaClient,
  study: StudyWithArms,
  now = new Date(),
): Promise<StudyProgress> {
  const [tasks, cells, peopleActive, rewards, median, counts, deployed] = await Promise.all([
    prisma.studyTask.count({ where: { studyId: study.id } }),
    studySessionCells(prisma, study.id),
    studyPeopleActive(prisma, study.id),
    studyRewardCounts(prisma, study.id),
    medianActiveMinutes(prisma, { studyId: study.id, statuses: ['answered'] }),
    studyAnsweredCounts(prisma, study.id, projectionWindow(now)),
    deployedPolicy(prisma),
  ]);
  const serving = study.arms.length ? study.arms.map((a) => a.policyVersion) : deployed ? [deployed] : [];
  const answeredByTask = new Map<string, number>();
  for (const c of cells)
    answeredByTask.set(c.taskId, (answeredByTask.get(c.taskId) ?? 0) + (c.status === 'answered' ? c.n : 0));
  const k = study.perTask;
  let complete = 0;
  for (const n of answeredByTask.values()) if (k !== null && n >= k) complete++;
  const sum = (pick: (c: (typeof cells)[number]) => boolean) => cells.filter(pick).reduce((a, c) => a + c.n, 0);
  const answered = sum((c) => c.status === 'answered');
  return {
    tasks,
    complete,
    partial: answeredByTask.size - complete,
    untouched: tasks - answeredByTask.size,
    answered,
    active: sum((c) => c.status === 'active'),
    arms: study.arms.map((a) => ({
      policy: a.policyVersion.name,
      share: a.share,
      answered: sum((c) => c.policyVersionId === a.policyVersionId && c.status === 'answered'),
      active: sum((c) => c.policyVersionId === a.policyVersionId && c.status === 'active'),
    })),
    peopleActive,
    criticPairs: rewardPairCount(rewards.map((r) => ({ groupId: r.taskId, reward: r.reward, n: r.n }))),
    medianActiveMinutes: median,
    projection: projectCompletion({
      remaining: k === null ? null : tasks * k - answered,
      answered: counts.answered,
      recent: counts.recent,
      firstStartedAt: counts.firstStartedAt,
      now,
    }),
    deployed: deployed?.name ?? null,
    starterOnly: servesOnlyStarter(serving),
  };
}

const day = (d: Date | null) => (d ? d.toISOString().slice(0, 16).replace('T', ' ') + ' UTC' : '—');

/** When a study is projected to end, in words (the CLI's study view and the dashboard's /studies). */
export function formatProjection(p: Projection): string {
  switch (p.state) {
    case 'no-k':
      return 'none (no k: the study has no end)';
    case 'complete':
      return 'complete (every task has its k answered sessions)';
    case 'not-enough-data':
      return `not enough data yet (${p.remaining} slot(s) left; fewer than ${PROJECTION_MIN_SESSIONS} sessions answered)`;
    case 'projected':
      return `${day(p.at)} (${p.remaining} slot(s) left at ${p.perDay.toFixed(1)} answered a day, ${p.basis === 'last-24h' ? 'over the last 24 h' : 'since the first session'})`;
  }
}

/** The study and its progress as lines of text (`sweetloop study show`, `/mod study status`). */
export function formatStudy(s: StudyWithArms, p: StudyProgress): string {
  const pay =
    s.payPerSessionCents === null && s.bonusSuccessCents === null
      ? 'none'
      : `${formatAmount(s.payPerSessionCents ?? 0, s.currency)} a session, +${formatAmount(s.bonusSuccessCents ?? 0, s.currency)} on success`;
  return [
    `study ${s.name} (${s.status})`,
    `  tasks: ${p.tasks} ${s.kind ?? 'backend/frontend'} (${s.split} split), k = ${s.perTask ?? 'none (balanced)'} sessions a task, seed ${s.seed}`,
    `  arms: ${s.arms.map((a) => `${a.policyVersion.name} ${a.share}%`).join(', ') || `the deployed version (${p.deployed ?? 'none deployed'})`}`,
    ...(p.starterOnly ? [`  warning: ${STARTER_ONLY_WARNING}`] : []),
    `  consent: ${s.consentText ? `version ${s.consentVersion} (sha256 ${s.consentSha256!.slice(0, 12)}…)` : "the bot's notice"}`,
    `  pay: ${pay}; at most ${s.maxSessionsPerPerson ?? 'any number of'} session(s) a person`,
    `  opens ${day(s.opensAt)}, closes ${day(s.closesAt)}; bound to ${[...s.guildIds.map((g) => `guild ${g}`), ...s.channelIds.map((c) => `channel ${c}`)].join(', ') || 'nowhere (any guild)'}`,
    `  progress: ${p.complete} task(s) complete, ${p.partial} partial, ${p.untouched} untouched; ${p.answered} answered, ${p.active} active session(s)`,
    ...p.arms.map((a) => `    arm ${a.policy} (${a.share}%): ${a.answered} answered, ${a.active} active`),
    `  people active now: ${p.peopleActive}`,
    `  critic pairs available: ${p.criticPairs} (per task, its best answered session against each one rewarded lower)`,
    `  median active time of answered sessions: ${p.medianActiveMinutes === null ? '— (none answered yet)' : `${p.medianActiveMinutes.toFixed(1)} min`} (pauses over ${IDLE_GAP_MS / 60_000} min left out)`,
    `  projected completion: ${formatProjection(p.projection)}`,
  ].join('\n');
}

/**
 * Whether a /mod user may see a study: an operator sees every study; a guild's moderator the studies bound to
 * their guild (or to one of its channels, `guildChannelIds`) and the unbound ones, which run in every guild.
 */
export function studyVisibleTo(
  s: Pick<Study, 'guildIds' | 'channelIds'>,
  actor: Pick<Actor, 'operator' | 'guildId'>,
  guildChannelIds: ReadonlySet<string> = new Set(),
): boolean {
  if (actor.operator) return true;
  if (s.guildIds.length === 0 && s.channelIds.length === 0) return true;
  if (actor.guildId && s.guildIds.includes(actor.guildId)) return true;
  return s.channelIds.some((c) => guildChannelIds.has(c));
}
