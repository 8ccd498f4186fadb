// `npm start` in a terminal with a foreign GGUF model in the agent's seat, as a person gets there: the database
// migrated, `sweetloop policy add NAME --gguf FILE --deploy`, then `npm start` (no Discord token: the console).
// The session plays on the file's model through the bot's own llama.cpp server, and its turns record the file.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSweetloop } from '../../testing/sweetloop-cli.ts';
import { makeForeignGguf } from '../../testing/tiny-checkpoint.ts';
import { openDatabase } from '../../prisma/db.ts';
import { Terminal, consoleEnv, hasScript } from '../helpers/terminal.ts';

const ROOT = resolve(import.meta.dirname, '../..');

describe.skipIf(!hasScript)('console session on a foreign GGUF model', () => {
  let dir: string;
  let term: Terminal | undefined;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sweetloop-console-gguf-'));
  });
  afterAll(async () => {
    term?.kill();
    await rm(dir, { recursive: true, force: true });
  });

  it('plays a session on it after `policy add --gguf --deploy`', async () => {
    const foreign = await makeForeignGguf(join(dir, 'foreign.gguf'));
    const env = consoleEnv(dir, { MODELS_DIR: join(dir, 'models'), MAX_TURNS: '2', LOG_LEVEL: 'warn' });
    const migrate = await runSweetloop(['db', 'migrate'], { env, timeoutMs: 180_000 });
    expect(migrate.code, migrate.stderr).toBe(0);
    const add = await runSweetloop(
      ['policy', 'add', 'foreign', '--gguf', foreign.file, '--max-tokens', '64', '--deploy'],
      { env, timeoutMs: 180_000 },
    );
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toContain('deployed foreign');

    term = new Terminal('npm start --silent', env, ROOT);
    let at = await term.expect('Do you accept? [y/N]');
    // Not the starter: no notice about it.
    expect(term.out.slice(0, at)).not.toContain('starter policy');
    term.type('y');
    at = await term.expect('Which kind of task?', at);
    term.type('b');
    at = await term.expect('Agent (message 1 of 2)', at);
    at = await term.expect('You: ', at);
    term.type('Round to two decimals, please.');
    at = await term.expect('Agent (message 2 of 2) — final answer', at);
    at = await term.expect('Result: ', at);
    at = await term.expect('How helpful was the agent?', at);
    term.type('3');
    at = await term.expect('A comment', at);
    term.type('');
    at = await term.expect('Start another session? [y/N]', at);
    term.type('n');
    expect(await term.exited).toBe(0);

    const db = await openDatabase({ pgliteDir: join(dir, 'pglite') });
    try {
      const s = await db.prisma.session.findFirstOrThrow({
        include: { turns: { orderBy: { index: 'asc' } }, policyVersion: true },
      });
      expect(s.policyVersion!.name).toBe('foreign');
      expect(s.turns.map((x) => x.role)).toEqual(['agent', 'human', 'agent']);
      expect(s.turns[0]!.provenance).toMatchObject({
        engine: 'llama',
        servedModel: 'foreign',
        weights: { file: foreign.file, quantization: 'F16' },
      });
    } finally {
      await db.close();
    }
  });
});
