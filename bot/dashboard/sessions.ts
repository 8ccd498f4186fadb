// The dashboard's reads of sessions: the filtered, paginated list and one session whole (task and hidden
// information, the dialogue with each agent turn's provenance and the critic's advantage where a SWEET-RL run
// scored it, the evaluation, ratings, quality signals and flags). People appear by pseudonym only
// (bot/export/pseudonym.ts, the same one exports use); a moderator sees their guild's sessions only.
import type { Prisma, PrismaClient } from '../../prisma/generated/client.ts';
import type { TurnProvenance } from '../../tasks/agent.ts';
import type { BackendTestResult } from '../../tasks/backend-eval.ts';
import { pseudonymizer } from '../export/pseudonym.ts';
import type { Viewer } from './access.ts';

export const PAGE_SIZE = 50;
export const OUTCOMES = ['success', 'failure', 'unscored', 'active', 'abandoned', 'expired'] as const;

export interface SessionFilter {
  study?: string;
  task?: string;
  kind?: 'backend' | 'frontend';
  policy?: string;
  /** A pseudonym, or its first characters (at least 6). */
  person?: string;
  outcome?: (typeof OUTCOMES)[number];
  flag?: 'open' | 'any';
  rating?: number;
  /** Days, YYYY-MM-DD (UTC), both included. */
  from?: string;
  to?: string;
  page: number;
}

export class FilterError extends Error {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** The filter from a query string; anything malformed is a FilterError naming the field. */
export function parseFilter(q: Record<string, unknown>): SessionFilter {
  const s = (k: string) => {
    const v = q[k];
    return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
  };
  const f: SessionFilter = { page: 1 };
  for (const k of ['study', 'task', 'policy'] as const) {
    const v = s(k);
    if (v === undefined) continue;
    if (!UUID.test(v)) throw new FilterError(`${k}: expected an id, got "${v}"`);
    f[k] = v;
  }
  const kind = s('kind');
  if (kind !== undefined) {
    if (kind !== 'backend' && kind !== 'frontend') throw new FilterError(`kind: backend or frontend, got "${kind}"`);
    f.kind = kind;
  }
  const person = s('person');
  if (person !== undefined) {
    if (!/^p_[0-9a-f]{4,32}$/.test(person))
      throw new FilterError(`person: a pseudonym such as p_1a2b3c, got "${person}"`);
    f.person = person;
  }
  const outcome = s('outcome');
  if (outcome !== undefined) {
    if (!(OUTCOMES as readonly string[]).includes(outcome))
      throw new FilterError(`outcome: one of ${OUTCOMES.join(', ')}, got "${outcome}"`);
    f.outcome = outcome as SessionFilter['outcome'];
  }
  const flag = s('flag');
  if (flag !== undefined) {
    if (flag !== 'open' && flag !== 'any') throw new FilterError(`flag: open or any, got "${flag}"`);
    f.flag = flag;
  }
  const rating = s('rating');
  if (rating !== undefined) {
    if (!/^[1-5]$/.test(rating)) throw new FilterError(`rating: 1 to 5, got "${rating}"`);
    f.rating = Number(rating);
  }
  for (const k of ['from', 'to'] as const) {
    const v = s(k);
    if (v === undefined) continue;
    if (!DAY.test(v) || Number.isNaN(Date.parse(`${v}T00:00:00Z`)))
      throw new FilterError(`${k}: a day such as 2027-01-31, got "${v}"`);
    f[k] = v;
  }
  const page = s('page');
  if (page !== undefined) {
    if (!/^\d{1,6}$/.test(page) || Number(page) < 1)
      throw new FilterError(`page: a whole number from 1, got "${page}"`);
    f.page = Number(page);
  }
  return f;
}

/** Participant ids whose pseudonym starts with `prefix`. */
async function participantsByPseudonym(prisma: PrismaClient, salt: string, prefix: string): Promise<string[]> {
  const pseudo = pseudonymizer(salt);
  const all = await prisma.participant.findMany({ select: { id: true, discordUserId: true } });
  return all.filter((p) => pseudo(p.discordUserId).startsWith(prefix)).map((p) => p.id);
}

export async function sessionWhere(
  prisma: PrismaClient,
  viewer: Viewer,
  f: SessionFilter,
  salt: string,
): Promise<Prisma.SessionWhereInput> {
  const and: Prisma.SessionWhereInput[] = [];
  if (viewer.role === 'moderator') and.push({ guildId: viewer.guildId });
  if (f.study) and.push({ studyId: f.study });
  if (f.task) and.push({ taskId: f.task });
  if (f.kind) and.push({ task: { kind: f.kind } });
  if (f.policy) and.push({ policyVersionId: f.policy });
  if (f.person) and.push({ participantId: { in: await participantsByPseudonym(prisma, salt, f.person) } });
  if (f.outcome === 'success' || f.outcome === 'failure')
    and.push({ evaluation: { success: f.outcome === 'success' } });
  else if (f.outcome === 'unscored') and.push({ status: 'answered', evaluation: null });
  else if (f.outcome) and.push({ status: f.outcome });
  if (f.flag === 'open') and.push({ flags: { some: { resolvedAt: null } } });
  else if (f.flag === 'any') and.push({ flags: { some: {} } });
  if (f.rating) and.push({ ratings: { some: { value: f.rating } } });
  if (f.from) and.push({ startedAt: { gte: new Date(`${f.from}T00:00:00Z`) } });
  if (f.to) and.push({ startedAt: { lt: new Date(Date.parse(`${f.to}T00:00:00Z`) + 86_400_000) } });
  return { AND: and };
}

export interface SessionRow {
  id: string;
  startedAt: Date;
  status: string;
  kind: string;
  task: string;
  taskId: string;
  study: string | null;
  policy: string | null;
  person: string;
  simulated: boolean;
  turns: number;
  score: number | null;
  success: boolean | null;
  rating: number | null;
  openFlags: number;
}

export async function listSessions(
  prisma: PrismaClient,
  viewer: Viewer,
  f: SessionFilter,
  salt: string,
): Promise<{ rows: SessionRow[]; total: number; pages: number }> {
  const where = await sessionWhere(prisma, viewer, f, salt);
  const pseudo = pseudonymizer(salt);
  const [total, rows] = await Promise.all([
    prisma.session.count({ where }),
    prisma.session.findMany({
      where,
      orderBy: [{ startedAt: 'desc' }, { id: 'desc' }],
      skip: (f.page - 1) * PAGE_SIZE,
      take: PAGE_SIZE,
      select: {
        id: true,
        startedAt: true,
        status: true,
        simulated: true,
        turnCount: true,
        taskId: true,
        task: { select: { kind: true, description: true } },
        study: { select: { name: true } },
        policyVersion: { select: { name: true } },
        participant: { select: { discordUserId: true } },
        evaluation: { select: { score: true, success: true } },
        ratings: { select: { value: true }, take: 1 },
        _count: { select: { flags: { where: { resolvedAt: null } } } },
      },
    }),
  ]);
  return {
    total,
    pages: Math.max(1, Math.ceil(total / PAGE_SIZE)),
    rows: rows.map((s) => ({
      id: s.id,
      startedAt: s.startedAt,
      status: s.status,
      kind: s.task.kind,
      task: s.task.description.length > 90 ? `${s.task.description.slice(0, 90)}…` : s.task.description,
      taskId: s.taskId,
      study: s.study?.name ?? null,
      policy: s.policyVersion?.name ?? null,
      person: pseudo(s.participant.discordUserId),
      simulated: s.simulated,
      turns: s.turnCount,
      score: s.evaluation?.score ?? null,
      success: s.evaluation?.success ?? null,
      rating: s.ratings[0]?.value ?? null,
      openFlags: s._count.flags,
    })),
  };
}

export interface TurnView {
  index: number;
  role: string;
  content: string;
  createdAt: Date;
  promptTokens: number | null;
  completionTokens: number | null;
  latencyMs: number | null;
  provenance: TurnProvenance | null;
  /** The latest run's critic advantage of this agent turn, and which run. */
  advantage: { value: number; run: string } | null;
  /** The turn's exact tokens, when recorded (prisma/schema.prisma TurnTokens): how many, and the weights. */
  tokens: { count: number; weightsVersion: string } | null;
}

export async function sessionDetail(prisma: PrismaClient, viewer: Viewer, id: string, salt: string) {
  if (!UUID.test(id)) return null;
  const s = await prisma.session.findUnique({
    where: { id },
    include: {
      task: true,
      study: { select: { id: true, name: true } },
      policyVersion: { select: { id: true, name: true, algorithm: true } },
      participant: { select: { discordUserId: true, role: true } },
      turns: {
        orderBy: { index: 'asc' },
        include: {
          advantages: { orderBy: { createdAt: 'desc' }, take: 1 },
          tokens: { select: { ids: true, weightsVersion: true } },
        },
      },
      evaluation: true,
      ratings: { include: { rater: { select: { discordUserId: true } } } },
      flags: { orderBy: { createdAt: 'asc' } },
      quality: true,
    },
  });
  if (!s) return null;
  if (viewer.role === 'moderator' && s.guildId !== viewer.guildId) return null;
  const pseudo = pseudonymizer(salt);
  const turns: TurnView[] = s.turns.map((t) => ({
    index: t.index,
    role: t.role,
    content: t.content,
    createdAt: t.createdAt,
    promptTokens: t.promptTokens,
    completionTokens: t.completionTokens,
    latencyMs: t.latencyMs,
    provenance: (t.provenance as TurnProvenance | null) ?? null,
    advantage: t.advantages[0] ? { value: t.advantages[0].advantage, run: t.advantages[0].trainingRunId } : null,
    tokens: t.tokens ? { count: t.tokens.ids.length, weightsVersion: t.tokens.weightsVersion } : null,
  }));
  const detail = (s.evaluation?.detail ?? null) as {
    tests?: BackendTestResult[];
    similarity?: number;
    metric?: string;
    error?: string;
  } | null;
  return {
    id: s.id,
    status: s.status,
    channel: s.channel,
    simulated: s.simulated,
    startedAt: s.startedAt,
    endedAt: s.endedAt,
    endReason: s.endReason,
    reward: s.reward,
    answer: s.answer,
    study: s.study,
    policy: s.policyVersion,
    person: pseudo(s.participant.discordUserId),
    task: {
      id: s.task.id,
      kind: s.task.kind,
      source: s.task.source,
      description: s.task.description,
      hidden: s.task.hiddenReference,
      testCases: (s.task.testCases as string[] | null) ?? null,
    },
    turns,
    scoredByCritic: turns.some((t) => t.advantage !== null),
    evaluation: s.evaluation
      ? {
          score: s.evaluation.score,
          success: s.evaluation.success,
          metric: s.evaluation.metric,
          testsPassed: s.evaluation.testsPassed,
          testsTotal: s.evaluation.testsTotal,
          tests: detail?.tests ?? [],
          error: detail?.error ?? null,
        }
      : null,
    ratings: s.ratings.map((r) => ({
      value: r.value,
      comment: r.comment,
      by: pseudo(r.rater.discordUserId),
      own: r.raterId === s.participantId,
    })),
    quality: s.quality ? { score: s.quality.score, signals: s.quality.signals as Record<string, unknown> } : null,
    flags: s.flags.map((f) => ({
      reason: f.reason,
      createdAt: f.createdAt,
      resolvedAt: f.resolvedAt,
      resolvedReason: f.resolvedReason,
    })),
  };
}

/** The HTML of a frontend session's target page and answer, for the screenshots (null: not a frontend session or not visible). */
export async function frontendPages(
  prisma: PrismaClient,
  viewer: Viewer,
  id: string,
): Promise<{ reference: string; answer: string | null } | null> {
  if (!UUID.test(id)) return null;
  const s = await prisma.session.findUnique({
    where: { id },
    select: { guildId: true, answer: true, task: { select: { kind: true, hiddenReference: true } } },
  });
  if (!s || s.task.kind !== 'frontend') return null;
  if (viewer.role === 'moderator' && s.guildId !== viewer.guildId) return null;
  return { reference: s.task.hiddenReference, answer: s.answer };
}
