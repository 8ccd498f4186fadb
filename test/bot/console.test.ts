// `npm start` without a Discord token, driven through a pseudo-terminal (util-linux `script`) like a person at
// a terminal: consent, a backend session with the policy served by the inference worker, the rating. It runs
// on the embedded PGlite database, as a user's first `npm start` does; the policy is a tiny random-weight
// checkpoint given by POLICY_MODEL_DIR, whose turns take milliseconds (the first run on the shipped starter is
// in test/bin/commands/bot.test.ts).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../prisma/db.ts';
import { makeTinyCheckpoint } from '../../testing/tiny-checkpoint.ts';
import { Terminal, consoleEnv, hasScript } from '../helpers/terminal.ts';

const ROOT = resolve(import.meta.dirname, '../..');

describe.skipIf(!hasScript)('console channel (npm start without DISCORD_TOKEN)', () => {
  let dir: string;
  let term: Terminal | undefined;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sweetloop-console-'));
  });
  afterAll(async () => {
    term?.kill();
    await rm(dir, { recursive: true, force: true });
  });

  it('runs one session in a terminal: consent, hidden code, chat, answer, evaluation, rating', async () => {
    const ckpt = await makeTinyCheckpoint({ dir: join(dir, 'tiny'), maxPositionEmbeddings: 16384 });
    // Two agent turns: a question, then (by the ColBench rule) the answer.
    const env = consoleEnv(dir, { POLICY_MODEL_DIR: ckpt, MAX_TURNS: '2', LOG_LEVEL: 'warn' });
    term = new Terminal('npm start --silent', env, ROOT);
    let at = await term.expect('Do you accept? [y/N]');
    term.type('y');
    at = await term.expect('Which kind of task?', at);
    term.type('b');
    at = await term.expect('Only you can see this', at);
    at = await term.expect('def ', at); // the reference code is shown
    at = await term.expect('Agent (message 1 of 2)', at);
    at = await term.expect('You: ', at);
    term.type('Round to two decimals, please.');
    at = await term.expect('Agent (message 2 of 2) — final answer', at);
    at = await term.expect('Result: ', at);
    at = await term.expect('How helpful was the agent?', at);
    term.type('9');
    at = await term.expect('Please type a number from 1 to 5.', at);
    term.type('2');
    at = await term.expect('A comment', at);
    term.type('It did not ask much.');
    at = await term.expect('Start another session? [y/N]', at);
    term.type('n');
    expect(await term.exited).toBe(0);

    const db = await openDatabase({ pgliteDir: join(dir, 'pglite') });
    try {
      const p = await db.prisma.participant.findFirstOrThrow({ where: { discordUserId: { startsWith: 'console:' } } });
      expect(p.consentGivenAt).not.toBeNull();
      const s = await db.prisma.session.findFirstOrThrow({
        where: { participantId: p.id },
        include: {
          turns: { orderBy: { index: 'asc' } },
          evaluation: true,
          ratings: true,
          policyVersion: true,
          task: true,
        },
      });
      expect(s.channel).toBe('console');
      expect(s.task.kind).toBe('backend');
      expect(s.status).toBe('answered');
      expect(s.turns.map((t) => t.role)).toEqual(['agent', 'human', 'agent']);
      expect(s.turns[1]!.content).toBe('Round to two decimals, please.');
      // Answered by the bot's own OpenAI-compatible server (trainer/serve/local.ts), llama.cpp engine.
      expect(s.turns[0]!.provenance).toMatchObject({ engine: 'llama', servedModel: s.policyVersion!.name });
      expect(s.evaluation).not.toBeNull();
      expect(s.evaluation!.testsTotal).toBeGreaterThan(0);
      expect(s.ratings[0]!.value).toBe(2);
      expect(s.ratings[0]!.comment).toBe('It did not ask much.');
      expect(s.policyVersion!.status).toBe('deployed');
      expect(s.policyVersion!.checkpointPath).toBe(ckpt);
      expect(await db.prisma.task.count()).toBeGreaterThan(0); // seeded on first start
    } finally {
      await db.close();
    }
  });
});
