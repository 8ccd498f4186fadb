// Pairwise preferences from people (what Open-Assistant collected and ColBench never had): a person is shown two
// finished sessions of the same task and says which agent helped more. Offering a comparison stores it unanswered
// (so buttons need only its id); the answer completes it. Only sessions played by simulated collaborators are
// shown: another person's messages are theirs, and the consent text does not cover showing them to others.
// The pairs feed the critic's Bradley-Terry training as chosen/rejected sessions (peoplePairs).
import type { Preference, Prisma, PrismaClient, Turn } from './generated/client.ts';
import { consentedWhere, dialogueTurns, simulatedSessionWhere } from './cohorts.ts';

export type PreferenceChoice = 'a' | 'b' | 'tie';
export const PREFERENCE_CHOICES: readonly PreferenceChoice[] = ['a', 'b', 'tie'];

export class PreferenceError extends Error {
  override name = 'PreferenceError';
}

export interface ComparedSession {
  sessionId: string;
  policy: string | null;
  turns: { role: 'agent' | 'human'; content: string }[];
  answer: string;
}

export interface Comparison {
  preferenceId: string;
  taskDescription: string;
  a: ComparedSession;
  b: ComparedSession;
}

/** Sessions a comparison may show: answered, evaluated, unflagged games of simulated collaborators. */
const COMPARABLE = {
  status: 'answered',
  evaluation: { isNot: null },
  flags: { none: { resolvedAt: null } },
  ...simulatedSessionWhere,
} satisfies Prisma.SessionWhereInput;

/** How many recent sessions a comparison is drawn from (enough variety, bounded work). */
const POOL = 500;

function shown(s: {
  id: string;
  answer: string | null;
  turns: Pick<Turn, 'role' | 'content'>[];
  policyVersion: { name: string } | null;
}): ComparedSession {
  return {
    sessionId: s.id,
    policy: s.policyVersion?.name ?? null,
    turns: dialogueTurns(s.turns),
    answer: s.answer ?? '',
  };
}

/**
 * Picks two comparable sessions of one task that this person has not judged yet (two different policy versions
 * when the task has them, in a random order) and stores the unanswered comparison. Null when there is none.
 * `random` is injectable for tests.
 */
export async function offerComparison(
  prisma: PrismaClient,
  raterId: string,
  random: () => number = Math.random,
): Promise<Comparison | null> {
  const pool = await prisma.session.findMany({
    where: COMPARABLE,
    orderBy: { endedAt: 'desc' },
    take: POOL,
    select: { id: true, taskId: true, policyVersionId: true },
  });
  const judged = await prisma.preference.findMany({
    where: { raterId },
    select: { sessionAId: true, sessionBId: true },
  });
  const seen = new Set(judged.map((j) => [j.sessionAId, j.sessionBId].sort().join(':')));
  const byTask = new Map<string, typeof pool>();
  for (const s of pool) byTask.set(s.taskId, [...(byTask.get(s.taskId) ?? []), s]);
  const candidates: [string, string][] = [];
  const mixed: [string, string][] = [];
  for (const list of byTask.values()) {
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        if (seen.has([list[i]!.id, list[j]!.id].sort().join(':'))) continue;
        candidates.push([list[i]!.id, list[j]!.id]);
        if (list[i]!.policyVersionId !== list[j]!.policyVersionId) mixed.push([list[i]!.id, list[j]!.id]);
      }
    }
  }
  const from = mixed.length ? mixed : candidates;
  if (from.length === 0) return null;
  const pair = from[Math.floor(random() * from.length)]!;
  const [aId, bId] = random() < 0.5 ? pair : [pair[1], pair[0]];
  const preference = await prisma.preference.create({ data: { raterId, sessionAId: aId, sessionBId: bId } });
  const include = {
    task: { select: { description: true } },
    policyVersion: { select: { name: true } },
    turns: { orderBy: { index: 'asc' as const }, select: { role: true, content: true } },
  };
  const [a, b] = await Promise.all([
    prisma.session.findUniqueOrThrow({ where: { id: aId }, include }),
    prisma.session.findUniqueOrThrow({ where: { id: bId }, include }),
  ]);
  return { preferenceId: preference.id, taskDescription: a.task.description, a: shown(a), b: shown(b) };
}

/** Records (or changes) the person's answer to a comparison they were shown. */
export async function recordPreference(
  prisma: PrismaClient,
  preferenceId: string,
  raterId: string,
  choice: PreferenceChoice,
): Promise<Preference> {
  if (!PREFERENCE_CHOICES.includes(choice)) throw new PreferenceError(`A choice is a, b or tie, got "${choice}".`);
  const p = await prisma.preference.findUnique({ where: { id: preferenceId } });
  if (!p) throw new PreferenceError('This comparison no longer exists.');
  if (p.raterId !== raterId) throw new PreferenceError('Only the person who was shown this comparison can answer it.');
  return prisma.preference.update({ where: { id: preferenceId }, data: { choice, answeredAt: new Date() } });
}

/**
 * Answered, decisive preferences as Bradley-Terry pairs (chosen = the session judged more helpful). With
 * `sessionIds`, only pairs whose two sessions are both among them (a run's data snapshot). Ties carry no order
 * and are left out; raters who withdrew or were deleted are left out too.
 */
export async function peoplePairs(
  prisma: PrismaClient,
  sessionIds?: readonly string[],
): Promise<{ id: string; chosen: string; rejected: string; raterId: string }[]> {
  const rows = await prisma.preference.findMany({
    where: {
      choice: { in: ['a', 'b'] },
      rater: { ...consentedWhere, deletedAt: null },
      ...(sessionIds ? { sessionAId: { in: [...sessionIds] }, sessionBId: { in: [...sessionIds] } } : {}),
    },
    orderBy: { answeredAt: 'asc' },
  });
  return rows.map((r) =>
    r.choice === 'a'
      ? { id: r.id, chosen: r.sessionAId, rejected: r.sessionBId, raterId: r.raterId }
      : { id: r.id, chosen: r.sessionBId, rejected: r.sessionAId, raterId: r.raterId },
  );
}
