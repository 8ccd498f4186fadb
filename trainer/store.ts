// Stores a simulated session the way a human one is stored (Participant, Session, Turns, Evaluation, reward),
// marked simulated, so training and exports read both through the same tables. One transaction a session.
import type { Prisma, PrismaClient } from '../prisma/generated/client.ts';
import type { EpisodeTurn } from '../tasks/protocol.ts';
import type { EvaluationOutcome } from '../tasks/scorer.ts';
import { blendedReward } from './pairs.ts';

export interface SimulatedSession {
  taskId: string;
  policyVersionId: string | null;
  /** Who played the collaborator ("rule-simulator", "llm:<model>"). */
  collaborator: string;
  turns: readonly EpisodeTurn[];
  answer: string;
  endedBy: 'answer' | 'turn-limit';
  evaluation: EvaluationOutcome;
  startedAt: Date;
  endedAt: Date;
}

/** The simulated participant standing for one collaborator (created on first use). */
export async function simulatedParticipant(prisma: PrismaClient, collaborator: string): Promise<string> {
  const discordUserId = `sim:${collaborator}`;
  try {
    const p = await prisma.participant.upsert({ where: { discordUserId }, create: { discordUserId, displayName: collaborator, role: 'simulated' }, update: {} });
    return p.id;
  } catch (err) {
    // Two games finishing at once both try to create it: the loser reads the winner's row.
    const p = await prisma.participant.findUnique({ where: { discordUserId } });
    if (!p) throw err;
    return p.id;
  }
}

export async function storeSimulatedSession(prisma: PrismaClient, s: SimulatedSession): Promise<string> {
  const participantId = await simulatedParticipant(prisma, s.collaborator);
  return prisma.$transaction(async (tx) => {
    const session = await tx.session.create({
      data: {
        taskId: s.taskId,
        participantId,
        policyVersionId: s.policyVersionId,
        channel: 'simulated',
        simulated: true,
        status: 'answered',
        turnCount: s.turns.filter((t) => t.role === 'agent').length,
        answer: s.answer,
        // No rating on a simulated session: the reward is the score.
        reward: blendedReward(s.evaluation.score, null, 0),
        startedAt: s.startedAt,
        lastActivityAt: s.endedAt,
        endedAt: s.endedAt,
        endReason: s.endedBy,
      },
    });
    await tx.turn.createMany({
      data: s.turns.map((t, index) => ({
        sessionId: session.id,
        index,
        role: t.role,
        content: t.content,
        ...(t.role === 'agent' ? { rawOutput: t.content } : {}),
        ...(t.promptTokens !== undefined ? { promptTokens: t.promptTokens } : {}),
        ...(t.completionTokens !== undefined ? { completionTokens: t.completionTokens } : {}),
      })),
    });
    await tx.evaluation.create({
      data: {
        sessionId: session.id,
        score: s.evaluation.score,
        success: s.evaluation.success,
        ...(s.evaluation.testsPassed !== undefined ? { testsPassed: s.evaluation.testsPassed } : {}),
        ...(s.evaluation.testsTotal !== undefined ? { testsTotal: s.evaluation.testsTotal } : {}),
        detail: (s.evaluation.detail ?? {}) as Prisma.InputJsonValue,
        ...(s.evaluation.metric !== undefined ? { metric: s.evaluation.metric } : {}),
        evaluatorVersion: s.evaluation.evaluatorVersion,
      },
    });
    return session.id;
  });
}
