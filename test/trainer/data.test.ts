// Only usable data reaches training: sessions of people who did not consent, withdrew, were deleted or banned,
// and flagged sessions, are never in a run's snapshot, whatever their reward.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { importTasks } from '../../prisma/task-store.ts';
import { generateMiniTasks } from '../../tasks/mini.ts';
import { loadTrajectories } from '../../trainer/data.ts';
import { createRun } from '../../trainer/runs.ts';
import { trainConfig } from '../../trainer/presets.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.drop();
});

async function humanSession(label: string, participant: Record<string, unknown>, score: number): Promise<string> {
  const task = await t.prisma.task.findFirstOrThrow();
  const p = await t.prisma.participant.create({
    data: {
      discordUserId: `1000000000000000${label.length}${Math.floor(Math.random() * 1e6)}`,
      displayName: label,
      ...participant,
    },
  });
  const s = await t.prisma.session.create({
    data: {
      taskId: task.id,
      participantId: p.id,
      channel: 'discord',
      status: 'answered',
      answer: 'def f(): pass',
      reward: score,
      endedAt: new Date(),
      turns: { create: [{ index: 0, role: 'agent', content: `I WANT TO ANSWER: def f(): return ${label.length}` }] },
      evaluation: { create: { score, success: score === 1, detail: {}, evaluatorVersion: 'test' } },
    },
  });
  return s.id;
}

describe('training data exclusions', () => {
  it('keeps consented, unflagged sessions and nothing else', async () => {
    await importTasks(t.prisma, generateMiniTasks({ seed: 3, count: 1, split: 'train' }));
    const now = new Date();
    const ok1 = await humanSession('consented', { consentGivenAt: now }, 1);
    const ok2 = await humanSession('consented-too', { consentGivenAt: now }, 0.2);
    await humanSession('never-consented', {}, 1);
    await humanSession('withdrew', { consentGivenAt: now, consentWithdrawnAt: now }, 1);
    await humanSession('deleted', { consentGivenAt: now, deletedAt: now }, 1);
    await humanSession('banned', { consentGivenAt: now, banned: true }, 1);
    const flagged = await humanSession('flagged', { consentGivenAt: now }, 1);
    await t.prisma.moderationFlag.create({ data: { sessionId: flagged, reason: 'abuse' } });
    const resolved = await humanSession('flag-resolved', { consentGivenAt: now }, 0.5);
    await t.prisma.moderationFlag.create({ data: { sessionId: resolved, reason: 'checked', resolvedAt: now } });

    const data = await loadTrajectories(t.prisma, { ratingWeight: 0, source: 'both' });
    expect(data.map((d) => d.sessionId).sort()).toEqual([ok1, ok2, resolved].sort());

    const run = await createRun(
      { prisma: t.prisma, checkpointRoot: '/tmp/unused' },
      {
        algorithm: 'rft',
        preset: 'cpu-small',
        train: trainConfig('cpu-small'),
        fromVersionId: '00000000-0000-0000-0000-000000000000',
        fromVersionName: 'x',
        fromCheckpoint: '/tmp/unused',
        kind: 'backend',
        ratingWeight: 0,
        data: { source: 'both', simulatedWeight: 1, seed: 1234 },
      },
    );
    const snapshot = (run.dataSnapshot as { sessions: { id: string; reward: number }[] }).sessions;
    expect(snapshot.map((s) => s.id).sort()).toEqual([ok1, ok2, resolved].sort());
    expect(snapshot.find((s) => s.id === ok2)!.reward).toBeCloseTo(0.2, 10);
  });
});
