// Simulated sessions for the sweet-rl tests, stored the way simulated games are (prisma/session-store.ts
// storeFinishedSession): three backend tasks with two sessions each (the k = 2 blocks), a fourth task with one
// simulated and one human session (a rated one whose blended reward must not leak), an abandoned session, and
// one frontend task. One session carries the provenance a live turn records (the exact prompt sent).
import type { PrismaClient } from '../../../prisma/generated/client.ts';
import { storeFinishedSession, type FinishedSession } from '../../../prisma/finished-session-store.ts';
import { importTasks } from '../../../prisma/task-store.ts';
import { buildDialogue, type DialogueTurn } from '../../../tasks/protocol.ts';
import type { TaskRecord } from '../../../tasks/model.ts';
import { contentHash } from '../../../tasks/importer.ts';

export const LONG_REPLY = `It should add one. ${'More detail. '.repeat(45)}`; // ~600 characters, over the 400 cap

export interface WorldTask {
  id: string;
  key: string;
  description: string;
  reference: string;
  testCases: string[] | null;
}

export interface SimulatedWorld {
  tasks: Record<string, WorldTask>;
  /** Simulated session ids by task key, in start order. */
  sessions: Record<string, string[]>;
  humanSession: string;
  abandonedSession: string;
}

function backend(key: string): TaskRecord {
  return {
    kind: 'backend',
    description: `Write ${key}: it changes a number somehow. The signature of the function is: def f${key}(x)`,
    reference: `def f${key}(x):\n    return x + 1\n`,
    testCases: [`f${key}(1)`, `f${key}(2)`, `f${key}(3)`],
    source: 'builtin',
    externalId: key,
    split: 'train',
  };
}

export async function seedSimulatedWorld(prisma: PrismaClient): Promise<SimulatedWorld> {
  const records: TaskRecord[] = [
    backend('B1'),
    backend('B2'),
    backend('B3'),
    backend('B4'),
    {
      kind: 'frontend',
      description: 'A landing page for a bakery with a big title.',
      reference: '<html><body><h1 class="text-4xl">Bakery</h1></body></html>',
      source: 'builtin',
      externalId: 'F1',
      split: 'train',
    },
  ];
  await importTasks(prisma, records);
  const tasks: Record<string, WorldTask> = {};
  for (const r of records) {
    const row = await prisma.task.findUniqueOrThrow({ where: { contentHash: contentHash(r) } });
    tasks[r.externalId] = {
      id: row.id,
      key: r.externalId,
      description: r.description,
      reference: r.reference,
      testCases: r.kind === 'backend' ? r.testCases : null,
    };
  }

  let minute = 0;
  const at = () => new Date(Date.UTC(2026, 1, 1, 12, minute++));
  const outcome = (passed: number) => ({
    score: passed / 3,
    success: passed === 3,
    testsPassed: passed,
    testsTotal: 3,
    detail: { fixture: true },
    evaluatorVersion: 'fixture-1',
  });
  const store = async (key: string, turns: FinishedSession['turns'], answer: string, passed: number) => {
    const startedAt = at();
    return storeFinishedSession(prisma, {
      taskId: tasks[key]!.id,
      policyVersionId: null,
      collaborator: 'rule-simulator',
      channel: 'simulated',
      turns,
      answer,
      endReason: 'answered',
      evaluation: outcome(passed),
      startedAt,
      endedAt: new Date(startedAt.getTime() + 30_000),
    });
  };
  const asking = (key: string, reply: string): FinishedSession['turns'] => [
    {
      role: 'agent',
      content: `What should f${key} return for 1?`,
      rawOutput: `Let me think.\nWhat should f${key} return for 1?`,
    },
    { role: 'human', content: reply },
    { role: 'agent', content: `I WANT TO ANSWER: def f${key}(x): return x + 1` },
  ];
  const direct = (key: string): FinishedSession['turns'] => [
    { role: 'agent', content: `I WANT TO ANSWER: def f${key}(x): return x` },
  ];

  // The prompt a live turn records: what the protocol sends, as an endpoint policy stores it.
  const withProvenance = (key: string, turns: FinishedSession['turns']): FinishedSession['turns'] => {
    const played: DialogueTurn[] = [];
    return turns.map((t) => {
      const out =
        t.role === 'agent'
          ? {
              ...t,
              provenance: {
                engine: 'endpoint',
                servedModel: 'fixture-model',
                adapter: null,
                sampling: { temperature: 1, topP: 1, maxTokens: 512, seed: 7 },
                finishReason: 'stop',
                latencyMs: 12,
                firstTokenMs: null,
                prompt: buildDialogue({ kind: 'backend', description: tasks[key]!.description }, played),
                droppedTurns: 0,
                logprobs: null,
              },
            }
          : t;
      played.push({ role: t.role, content: t.content });
      return out;
    });
  };

  const sessions: Record<string, string[]> = { B1: [], B2: [], B3: [], B4: [] };
  // Block 1 (first session of each task), then block 2: start order B1, B2, B3, B1, B2, B3.
  sessions.B1!.push(await store('B1', asking('B1', 'It adds one.'), 'def fB1(x): return x + 1', 3));
  sessions.B2!.push(await store('B2', withProvenance('B2', asking('B2', 'Add one.')), 'def fB2(x): return x + 1', 3));
  sessions.B3!.push(await store('B3', direct('B3'), 'def fB3(x): return x', 1));
  // A reply over the cap (a simulator that did not cut it): the export cuts the entry, not the prompt.
  sessions.B4!.push(await store('B4', asking('B4', LONG_REPLY), 'def fB4(x): return x', 0));
  sessions.B1!.push(await store('B1', direct('B1'), 'def fB1(x): return x', 0));
  sessions.B2!.push(await store('B2', direct('B2'), 'def fB2(x): return x', 2));
  sessions.B3!.push(await store('B3', asking('B3', 'Add one to it.'), 'def fB3(x): return x + 1', 3));

  // A person's session on B4, rated 5: its stored reward is blended (0.5), its score is 0.
  const person = await prisma.participant.create({
    data: { discordUserId: '777777777777777777', displayName: 'Pat', consentGivenAt: at() },
  });
  const human = await prisma.session.create({
    data: {
      taskId: tasks.B4!.id,
      participantId: person.id,
      policyVersionId: null,
      channel: 'discord',
      status: 'answered',
      turnCount: 1,
      answer: 'def fB4(x): return x',
      reward: 0.5,
      startedAt: at(),
      endedAt: at(),
      endReason: 'answered',
      turns: {
        create: [
          {
            index: 0,
            role: 'agent',
            content: 'I WANT TO ANSWER: def fB4(x): return x',
            rawOutput: 'I WANT TO ANSWER: def fB4(x): return x',
          },
        ],
      },
      evaluation: {
        create: { score: 0, success: false, testsPassed: 0, testsTotal: 3, detail: {}, evaluatorVersion: 'fixture-1' },
      },
      ratings: { create: [{ raterId: person.id, value: 5 }] },
    },
  });
  // Abandoned by the person after the agent's question: no answer, no evaluation.
  const sim = await prisma.participant.findUniqueOrThrow({ where: { discordUserId: 'sim:rule-simulator' } });
  const abandoned = await prisma.session.create({
    data: {
      taskId: tasks.B1!.id,
      participantId: sim.id,
      channel: 'simulated',
      simulated: true,
      status: 'abandoned',
      turnCount: 1,
      startedAt: at(),
      turns: {
        create: [
          { index: 0, role: 'agent', content: 'What is x?' },
          { index: 1, role: 'human', content: 'A number.' },
        ],
      },
    },
  });

  // The frontend task: one session whose final page is after the answer marker.
  const page = '<html><body><h1 class="text-4xl text-red-600">Bakery</h1></body></html>';
  const startedAt = at();
  await storeFinishedSession(prisma, {
    taskId: tasks.F1!.id,
    policyVersionId: null,
    collaborator: 'rule-simulator',
    channel: 'simulated',
    turns: [
      { role: 'agent', content: 'What colour is the title?' },
      { role: 'human', content: 'Red.' },
      { role: 'agent', content: `I WANT TO ANSWER: ${page}` },
    ],
    answer: page,
    endReason: 'answered',
    evaluation: { score: 0.85, success: false, metric: 'pixel-ssim-v1', detail: {}, evaluatorVersion: 'fixture-1' },
    startedAt,
    endedAt: startedAt,
  });
  return { tasks, sessions, humanSession: human.id, abandonedSession: abandoned.id };
}
