// Whole games stored at once, without a person: simulated sessions and imported trajectories, with the rows and
// counters a live session ends with (the live path, turn by turn, is session-store.ts).
import { randomUUID } from 'node:crypto';
import type { EndReason } from '../tasks/protocol.ts';
import type { EvaluationOutcome } from '../tasks/scorer.ts';
import { recordActiveTimes } from './active-time-store.ts';
import { SIMULATED_ROLE } from './cohorts.ts';
import type { PrismaClient } from './generated/client.ts';
import { agentTurnData, turnTokensOf, type AgentTurnInput } from './session-store.ts';
import { evaluationData, sessionReward } from './evaluation-store.ts';

/** The participant standing for a simulated collaborator ("sim:<name>"), created on first use. */
export async function simulatedParticipant(prisma: PrismaClient, collaborator: string): Promise<string> {
  const discordUserId = `sim:${collaborator}`;
  try {
    const p = await prisma.participant.upsert({
      where: { discordUserId },
      create: { discordUserId, displayName: collaborator, role: SIMULATED_ROLE },
      update: {},
    });
    return p.id;
  } catch (err) {
    // Two games finishing at once both try to create it: the loser reads the winner's row.
    const p = await prisma.participant.findUnique({ where: { discordUserId } });
    if (!p) throw err;
    return p.id;
  }
}

export interface FinishedSession {
  taskId: string;
  policyVersionId: string | null;
  /** Who played the collaborator ("rule-simulator", "llm:<model>", "import:<file>"). */
  collaborator: string;
  channel: 'simulated' | 'imported';
  /** Agent turns may carry what a live turn stores (raw output defaults to the content). */
  turns: readonly ({ role: 'agent' | 'human'; content: string } & Partial<Omit<AgentTurnInput, 'content'>>)[];
  answer: string;
  endReason: EndReason;
  evaluation: EvaluationOutcome;
  startedAt: Date;
  endedAt: Date;
}

/**
 * Stores a whole game played without a person (a simulated session, or an imported trajectory), marked
 * simulated, in one transaction: the same rows and counters a live session ends with.
 */
export async function storeFinishedSession(prisma: PrismaClient, s: FinishedSession): Promise<string> {
  const participantId = await simulatedParticipant(prisma, s.collaborator);
  return prisma.$transaction(async (tx) => {
    const session = await tx.session.create({
      data: {
        taskId: s.taskId,
        participantId,
        policyVersionId: s.policyVersionId,
        channel: s.channel,
        simulated: true,
        status: 'answered',
        turnCount: s.turns.filter((t) => t.role === 'agent').length,
        answer: s.answer,
        // No rating on a game without a person: the reward is the score.
        reward: sessionReward(s.evaluation.score, null, 0),
        startedAt: s.startedAt,
        lastActivityAt: s.endedAt,
        endedAt: s.endedAt,
        endReason: s.endReason,
        // Nobody is waiting to be shown a stored game: a resuming channel must not pick it up.
        resultShownAt: s.endedAt,
        ratingAskedAt: s.endedAt,
      },
    });
    // Ids made here, so that recorded tokens (turnTokensOf) can name their turns in the same transaction.
    const turns = s.turns.map((t, index) =>
      t.role === 'agent'
        ? { id: randomUUID(), ...agentTurnData(session.id, index, { ...t, rawOutput: t.rawOutput ?? t.content }) }
        : { id: randomUUID(), sessionId: session.id, index, role: 'human' as const, content: t.content },
    );
    await tx.turn.createMany({ data: turns });
    const tokens = s.turns.flatMap((t, i) => {
      const r = t.role === 'agent' ? turnTokensOf(t) : null;
      return r ? [{ turnId: turns[i]!.id, ids: r.ids, logprobs: r.logprobs, weightsVersion: r.weightsVersion }] : [];
    });
    if (tokens.length) await tx.turnTokens.createMany({ data: tokens });
    await tx.evaluation.create({ data: { sessionId: session.id, ...evaluationData(s.evaluation) } });
    await recordActiveTimes(tx, [session.id]);
    return session.id;
  });
}
