// Which task a person gets next. Balanced collection: among the tasks of the chosen kind that this person
// has never had, the one with the fewest sessions (active or answered) so far, ties broken at random. When
// the person does not choose a kind, the kind with fewer answered sessions per task is the one most needed.
import type { PrismaClient, TaskKind } from '../prisma/generated/client.ts';

export class NoTaskAvailableError extends Error {
  constructor(readonly kind: TaskKind) {
    super(`There is no ${kind} task left that you have not done yet. Thank you for all your sessions!`);
    this.name = 'NoTaskAvailableError';
  }
}

/** The kind with the fewer answered sessions per stored task (a kind with no tasks is never chosen). */
export async function neededKind(prisma: PrismaClient): Promise<TaskKind> {
  const tasks = await prisma.task.groupBy({ by: ['kind'], _count: { _all: true } });
  const answered = await prisma.session.findMany({ where: { status: 'answered' }, select: { task: { select: { kind: true } } } });
  const per: Record<string, number> = {};
  for (const k of ['backend', 'frontend'] as const) {
    const n = tasks.find((t) => t.kind === k)?._count._all ?? 0;
    if (n > 0) per[k] = answered.filter((s) => s.task.kind === k).length / n;
  }
  const kinds = Object.keys(per) as TaskKind[];
  if (kinds.length === 0) return 'backend';
  return kinds.sort((a, b) => per[a]! - per[b]!)[0]!;
}

/**
 * Picks the task for a person, or throws NoTaskAvailableError. Training-split tasks are preferred (human
 * sessions are training data); test-split tasks are used only when no training task is left.
 */
export async function pickTask(prisma: PrismaClient, participantId: string, kind: TaskKind): Promise<string> {
  for (const split of ['train', 'test'] as const) {
    const rows = await prisma.$queryRaw<{ id: string }[]>`
      SELECT t.id::text AS id
      FROM "Task" t
      LEFT JOIN "Session" s ON s."taskId" = t.id AND s.status IN ('active', 'answered')
      WHERE t.kind = ${kind}::"TaskKind" AND t.split = ${split}::"TaskSplit"
        AND NOT EXISTS (SELECT 1 FROM "Session" mine WHERE mine."taskId" = t.id AND mine."participantId" = ${participantId}::uuid)
      GROUP BY t.id
      ORDER BY count(s.id) ASC, random()
      LIMIT 1`;
    if (rows[0]) return rows[0].id;
  }
  throw new NoTaskAvailableError(kind);
}
