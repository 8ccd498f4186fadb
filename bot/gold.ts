// Gold checks: now and then (a share of new sessions set by moderators with /mod gold, off by default) a person
// plays a task whose agent side is replayed from a known finished session of that task, played with a simulated
// collaborator (so nobody's words are shown to anyone). The person cannot tell: it looks like any session. Since
// the questions are known, the replies can be checked against what the hidden information allows
// (tasks/quality.ts goldViolations); the result is one of the person's quality signals. A gold session played no
// policy: it is never training data (trainer/data.ts) and belongs to no experiment. Backend tasks only (the check
// reads numbers from the reference function).
import type { Agent, AgentReply, ChatMessage } from '../tasks/agent.ts';
import type { Prisma, PrismaClient } from '../prisma/generated/client.ts';
import { GOLD_SHARE_KEY, saveGoldShare } from '../prisma/moderation-store.ts';
import { simulatedSessionWhere } from '../prisma/cohorts.ts';

export class GoldError extends Error {
  override name = 'GoldError';
}

/** The share of new sessions that are gold checks (0 when never set). */
export async function goldShare(prisma: PrismaClient | Prisma.TransactionClient): Promise<number> {
  const s = await prisma.setting.findUnique({ where: { key: GOLD_SHARE_KEY } });
  return goldShareIn(s ? [s] : []);
}

/** The share of gold checks among settings read (0 when never set). */
export function goldShareIn(rows: readonly { key: string; value: unknown }[]): number {
  const share = (rows.find((r) => r.key === GOLD_SHARE_KEY)?.value as { share?: unknown } | null | undefined)?.share;
  return typeof share === 'number' && share >= 0 && share <= 1 ? share : 0;
}

export async function setGoldShare(prisma: PrismaClient, actor: string, share: number): Promise<void> {
  if (!(share >= 0 && share <= 1))
    throw new GoldError(`The share of gold checks is a percentage from 0 to 100, got ${Math.round(share * 100)}.`);
  await saveGoldShare(prisma, actor, share);
}

/**
 * The session to replay for a new session on `taskId`, when this one is drawn as a gold check (`draw` in [0, 1)
 * below the share) and the task has a usable source: an answered backend session of a simulated collaborator in
 * which the agent asked at least one question. Null otherwise.
 */
export async function goldSource(
  prisma: PrismaClient | Prisma.TransactionClient,
  taskId: string,
  draw: number,
  /** The share, when the caller has just read it (goldShareIn). */
  knownShare?: number,
): Promise<string | null> {
  const share = knownShare ?? (await goldShare(prisma));
  if (!(draw < share)) return null;
  const sources = await prisma.session.findMany({
    where: {
      taskId,
      status: 'answered',
      goldSourceId: null,
      turnCount: { gte: 2 },
      task: { kind: 'backend' },
      ...simulatedSessionWhere,
    },
    select: { id: true },
    orderBy: { endedAt: 'desc' },
    take: 20,
  });
  if (sources.length === 0) return null;
  return sources[Math.floor(draw * 7919) % sources.length]!.id;
}

/** An agent that says, at its k-th turn, what the source session's agent said at its k-th turn. */
export function replayAgent(name: string, agentTurns: readonly string[]): Agent {
  if (agentTurns.length === 0) throw new GoldError('a gold check needs a source session with agent turns');
  return {
    name,
    async reply(dialogue: ChatMessage[]): Promise<AgentReply> {
      const k = dialogue.filter((m) => m.role === 'assistant').length;
      return { text: agentTurns[Math.min(k, agentTurns.length - 1)]! };
    },
  };
}

/** The replay agent of a gold session's source. */
export async function goldAgent(prisma: PrismaClient, sourceId: string): Promise<Agent> {
  const turns = await prisma.turn.findMany({
    where: { sessionId: sourceId, role: 'agent' },
    orderBy: { index: 'asc' },
    select: { content: true },
  });
  return replayAgent(
    `gold:${sourceId.slice(0, 8)}`,
    turns.map((t) => t.content),
  );
}
