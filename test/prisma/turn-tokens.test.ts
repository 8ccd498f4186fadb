// Tokens per turn over the project's OpenAI-compatible test server (real HTTP): an endpoint version with
// recordTokens stores each agent turn's token ids, log-probabilities and weights version, and the jsonl and
// Parquet exports carry them; a version without recording stores none and its turns say so.
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parquetReadObjects } from 'hyparquet';
import { createTestDatabase } from '../../testing/database.ts';
import {
  fakeLogprob,
  fakeTokenId,
  splitTokens,
  startOpenAiServer,
  type OpenAiServer,
} from '../../testing/openai-server.ts';
import { createEndpointAgent } from '../../trainer/policies/endpoint-agent.ts';
import { appendAgentTurn } from '../../prisma/session-store.ts';
import { storeFinishedSession } from '../../prisma/finished-session-store.ts';
import { exportSessions } from '../../bot/export/export.ts';
import { buildDialogue } from '../../tasks/protocol.ts';
import type { PrismaClient } from '../../prisma/generated/client.ts';

let t: Awaited<ReturnType<typeof createTestDatabase>>;
let prisma: PrismaClient;
let server: OpenAiServer;
let dir: string;

beforeAll(async () => {
  t = await createTestDatabase();
  prisma = t.prisma;
  server = await startOpenAiServer({ reply: () => 'Is x ever negative?' });
  dir = await mkdtemp(join(tmpdir(), 'sweetloop-tokens-'));
});
afterAll(async () => {
  await server?.close();
  await t?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The test server's endpoint settings (its url is known once it listens). */
const servingOf = () => ({
  url: server.url,
  model: 'test-model',
  contextWindow: 4096,
  temperature: 0.7,
  topP: 0.95,
  maxTokens: 64,
});

it('stores and exports exact tokens for a recording version, none (and says so) for another', async () => {
  const participant = await prisma.participant.create({
    data: { discordUserId: '111111111111111111', displayName: 'a', consentGivenAt: new Date() },
  });
  const task = await prisma.task.create({
    data: {
      kind: 'backend',
      source: 'builtin',
      externalId: 'T',
      contentHash: 'h',
      description: 'Write f. The signature of the function is: def f(x)',
      hiddenReference: 'def f(x):\n    return x',
      testCases: ['f(1)'],
      split: 'train',
    },
  });
  const ids: Record<string, string> = {};
  for (const [name, recordTokens] of [
    ['rec', true],
    ['plain', false],
  ] as const) {
    const agent = await createEndpointAgent({ name, serving: { ...servingOf(), recordTokens, revision: 'abc123' } });
    const reply = await agent.reply(buildDialogue({ kind: 'backend', description: task.description }, []));
    const session = await prisma.session.create({
      data: { taskId: task.id, participantId: participant.id, channel: 'console', status: 'active' },
    });
    ids[name] = session.id;
    // Turns are appended to an active session only (prisma/session-store.ts); the export reads answered ones.
    await appendAgentTurn(prisma, session.id, {
      content: reply.text,
      rawOutput: reply.text,
      provenance: reply.provenance ?? null,
    });
    await prisma.session.update({ where: { id: session.id }, data: { status: 'answered' } });
  }
  const expected = splitTokens('Is x ever negative?');
  const stored = await prisma.turnTokens.findMany({ include: { turn: true } });
  expect(stored).toHaveLength(1);
  expect(stored[0]!.turn.sessionId).toBe(ids.rec);
  expect(stored[0]!.ids).toEqual(expected.map(fakeTokenId));
  expect(stored[0]!.logprobs).toEqual(expected.map((x, i) => fakeLogprob(x, i)));
  expect(stored[0]!.weightsVersion).toBe('test-model@abc123');
  // The request asked for ids only when recording.
  expect(server.chatRequests().map((r) => r.body.return_tokens_as_token_ids ?? false)).toEqual([true, false]);
  // Stored once: the recorded turn's provenance says where they are and holds no copy; the other keeps its logprobs.
  const turns = await prisma.turn.findMany({ where: { role: 'agent' } });
  const provenanceOf = (id: string) => turns.find((x) => x.sessionId === id)!.provenance as Record<string, unknown>;
  expect(provenanceOf(ids.rec!)).toMatchObject({ tokens: 'recorded', logprobs: null, logprobsRequested: true });
  expect(provenanceOf(ids.plain!)).toMatchObject({ tokens: 'off' });
  expect((provenanceOf(ids.plain!).logprobs as unknown[]).length).toBe(expected.length);

  const jsonl = join(dir, 'all.jsonl');
  const r = await exportSessions(prisma, { format: 'jsonl', salt: 'test-salt-123', filters: {} }, jsonl);
  const rows = readFileSync(jsonl, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const bySession = new Map(rows.map((x) => [x.session.id, x]));
  expect(bySession.get(ids.rec).turns[0]).toMatchObject({
    tokenRecording: 'recorded',
    tokens: { ids: stored[0]!.ids, logprobs: stored[0]!.logprobs, weightsVersion: 'test-model@abc123' },
  });
  expect(bySession.get(ids.plain).turns[0]).toMatchObject({ tokenRecording: 'off', tokens: null });
  expect(r.cardMarkdown).toContain(
    'agent turns with their exact tokens (ids, log-probabilities, weights version): 1; without: 1 (the policy version does not record tokens)',
  );

  const pq = join(dir, 'all.parquet');
  await exportSessions(prisma, { format: 'parquet', salt: 'test-salt-123', filters: {} }, pq);
  const bytes = readFileSync(pq);
  const prow = (await parquetReadObjects({
    file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength),
  })) as any[];
  const rec = prow.find((x) => x.session_id === ids.rec).turns[0];
  expect(rec).toMatchObject({
    token_recording: 'recorded',
    token_ids: stored[0]!.ids,
    token_logprobs: stored[0]!.logprobs,
    weights_version: 'test-model@abc123',
  });
  expect(prow.find((x) => x.session_id === ids.plain).turns[0].token_recording).toBe('off');
});

it('stores the exact tokens of a whole game stored at once (simulated), once', async () => {
  const task = await prisma.task.findFirstOrThrow();
  const agent = await createEndpointAgent({
    name: 'rec',
    serving: { ...servingOf(), recordTokens: true },
  });
  const reply = await agent.reply(buildDialogue({ kind: 'backend', description: task.description }, []));
  const sessionId = await storeFinishedSession(prisma, {
    taskId: task.id,
    policyVersionId: null,
    collaborator: 'rule-simulator',
    channel: 'simulated',
    turns: [
      { role: 'agent', content: reply.text, provenance: reply.provenance ?? null },
      { role: 'human', content: 'Never.' },
      { role: 'agent', content: 'I WANT TO ANSWER: def f(x):\n    return x' },
    ],
    answer: 'def f(x):\n    return x',
    endReason: 'answered',
    evaluation: { score: 1, success: true, testsPassed: 1, testsTotal: 1, detail: {}, evaluatorVersion: 't' },
    startedAt: new Date(),
    endedAt: new Date(),
  });
  const turns = await prisma.turn.findMany({
    where: { sessionId },
    orderBy: { index: 'asc' },
    include: { tokens: true },
  });
  const expected = splitTokens('Is x ever negative?');
  expect(turns[0]!.tokens).toMatchObject({
    ids: expected.map(fakeTokenId),
    logprobs: expected.map((x, i) => fakeLogprob(x, i)),
    weightsVersion: 'test-model@unknown-revision',
  });
  expect(turns[0]!.provenance).toMatchObject({ tokens: 'recorded', logprobs: null });
  expect(turns.slice(1).map((x) => x.tokens)).toEqual([null, null]);
});
