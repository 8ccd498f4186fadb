// `sweetloop policy add|list`, `deploy NAME` and `rollback` end to end: the real binary, a real database, a real
// OpenAI-compatible server; token recording turned on and off per endpoint version (`add|update --record-tokens`).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { startOpenAiServer, type OpenAiServer } from '../../../testing/openai-server.ts';
import { runSweetloop, type SweetloopRun } from '../../../testing/sweetloop-cli.ts';
import { deployedPolicy, registerVersion } from '../../../prisma/policy-store.ts';
import { appendAgentTurn } from '../../../prisma/session-store.ts';
import { buildDialogue } from '../../../tasks/protocol.ts';
import { loadAgent } from '../../../trainer/policies/agent-for.ts';

let t: TestDatabase;
let server: OpenAiServer;

function sweetloop(args: string[], env: Record<string, string> = {}): Promise<SweetloopRun> {
  return runSweetloop(args, {
    env: { ...process.env, LOG_LEVEL: 'warn', DATABASE_URL: t.url, ...env },
    timeoutMs: 120_000,
  });
}

beforeAll(async () => {
  t = await createTestDatabase();
  server = await startOpenAiServer({
    model: 'meta-llama/Llama-3.1-8B-Instruct',
    maxModelLen: 16384,
    apiKey: 'sk-cli-secret',
  });
}, 120_000);

afterAll(async () => {
  await server?.close();
  await t?.drop();
});

describe('sweetloop policy', () => {
  it('adds an endpoint version after asking the server, and lists every version with where it is served', async () => {
    await t.prisma.policyVersion.create({
      data: {
        name: 'starter-1',
        algorithm: 'starter',
        checkpointPath: '/ckpt/starter',
        checkpointSha256: 'x',
        status: 'deployed',
        deployedAt: new Date(),
      },
    });
    const add = await sweetloop(
      [
        'policy',
        'add',
        'llama-8b',
        '--endpoint',
        server.url,
        '--model',
        'meta-llama/Llama-3.1-8B-Instruct',
        '--api-key-env',
        'CLI_TEST_KEY',
        '--temperature',
        '0.3',
        '--max-tokens',
        '512',
      ],
      { CLI_TEST_KEY: 'sk-cli-secret' },
    );
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toContain(
      `registered llama-8b (endpoint, candidate): ${server.url} meta-llama/Llama-3.1-8B-Instruct, window 16384 tokens, temperature 0.3, top-p 0.95, max 512 tokens`,
    );
    expect(add.stdout + add.stderr).not.toContain('sk-cli-secret');

    const list = await sweetloop(['policy', 'list']);
    expect(list.code, list.stderr).toBe(0);
    const lines = list.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^name\s+kind\s+status\s+tokens\s+served at$/);
    expect(lines[1]).toMatch(/^starter-1\s+checkpoint\s+deployed\s+no\s+\/ckpt\/starter$/);
    expect(lines[2]).toMatch(
      new RegExp(
        `^llama-8b\\s+endpoint\\s+candidate\\s+no\\s+${server.url.replace(/[.]/g, '\\.')} meta-llama/Llama-3\\.1-8B-Instruct$`,
      ),
    );
    const json = JSON.parse((await sweetloop(['policy', 'list', '--json'])).stdout) as { name: string; kind: string }[];
    expect(json.map((r) => [r.name, r.kind])).toEqual([
      ['starter-1', 'checkpoint'],
      ['llama-8b', 'endpoint'],
    ]);
  });

  it('refuses a model the server does not serve, a missing key and bad numbers, with exit 1 and a message', async () => {
    const wrong = await sweetloop(
      ['policy', 'add', 'x', '--endpoint', server.url, '--model', 'gpt-4o', '--api-key-env', 'CLI_TEST_KEY'],
      { CLI_TEST_KEY: 'sk-cli-secret' },
    );
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(
      /does not serve a model named "gpt-4o"; it serves: meta-llama\/Llama-3\.1-8B-Instruct/,
    );
    const noKey = await sweetloop([
      'policy',
      'add',
      'x',
      '--endpoint',
      server.url,
      '--model',
      'm',
      '--api-key-env',
      'CLI_TEST_UNSET',
    ]);
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(/CLI_TEST_UNSET, which is not set/);
    const bad = await sweetloop(['policy', 'add', 'x', '--endpoint', server.url, '--model', 'm', '--top-p', '0']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--top-p must be a number in \(0, 1\]/);
    const later = await sweetloop([
      'policy',
      'add',
      'later',
      '--endpoint',
      'http://127.0.0.1:9/v1',
      '--model',
      'm',
      '--no-check',
      '--context-window',
      '4096',
    ]);
    expect(later.code, later.stderr).toBe(0);
  });

  it('deploys a version named as `policy add` says (sweetloop deploy NAME) and rolls back to the one before', async () => {
    await registerVersion(t.prisma, { name: 'cli-a', algorithm: 'external', kind: 'endpoint', checkpointPath: null });
    await registerVersion(t.prisma, { name: 'cli-b', algorithm: 'external', kind: 'endpoint', checkpointPath: null });
    const a = await sweetloop(['deploy', 'cli-a']);
    expect(a.code, a.stderr).toBe(0);
    expect(a.stdout.trim()).toBe('deployed cli-a');
    const b = await sweetloop(['deploy', 'cli-b']);
    expect(b.code, b.stderr).toBe(0);
    expect((await deployedPolicy(t.prisma))!.name).toBe('cli-b');
    const again = await sweetloop(['deploy', 'cli-b']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/"cli-b" is already deployed/);
    const unknown = await sweetloop(['deploy', 'no-such-version']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No policy version named "no-such-version"\. Recent versions: .*cli-b/);
    const missing = await sweetloop(['deploy']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/missing required argument 'name'/);

    const back = await sweetloop(['rollback']);
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdout.trim()).toBe('rolled back to cli-a');
    expect((await deployedPolicy(t.prisma))!.name).toBe('cli-a');
    const audit = await t.prisma.auditLog.findMany({ where: { actor: 'cli' } });
    expect(audit.map((x) => `${x.action}:${x.target}`).sort()).toEqual([
      'policy.deploy:cli-a',
      'policy.deploy:cli-b',
      'policy.rollback:cli-a',
    ]);
  });

  it("turns token recording on with a revision (add) and off again (update), and the version's turns follow it", async () => {
    const plain = await startOpenAiServer({ model: 'qwen-7b', maxModelLen: 8192, reply: () => 'Any edge cases?' });
    try {
      const wrongKind = await sweetloop(['policy', 'add', 'x', '--gguf', '/no/such.gguf', '--record-tokens']);
      expect(wrongKind.code).toBe(1);
      expect(wrongKind.stderr).toContain('drop --record-tokens');
      const add = await sweetloop([
        ...['policy', 'add', 'rec', '--endpoint', plain.url, '--model', 'qwen-7b'],
        ...['--record-tokens', '--revision', 'f00dcafe'],
      ]);
      expect(add.code, add.stderr).toBe(0);
      expect(add.stdout).toContain("max 1024 tokens; records each agent turn's tokens (revision f00dcafe)");
      const row = () => t.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'rec' } });
      expect((await row()).serving).toMatchObject({ recordTokens: true, revision: 'f00dcafe' });
      const listed = (await sweetloop(['policy', 'list'])).stdout.split('\n').find((l) => l.startsWith('rec '));
      expect(listed).toMatch(/^rec\s+endpoint\s+candidate\s+yes\s+/);

      // A turn of the version, as the bot stores it: its tokens recorded under the served model and revision.
      const task = await t.prisma.task.create({
        data: {
          ...{ kind: 'backend', source: 'builtin', contentHash: 'rec-task', split: 'train' },
          ...{
            description: 'Write f. The signature of the function is: def f(x)',
            hiddenReference: 'def f(x): return x',
          },
        },
      });
      const person = await t.prisma.participant.create({ data: { discordUserId: 'console:rec' } });
      const turnOf = async () => {
        const agent = await loadAgent(await row(), { prisma: t.prisma });
        const reply = await agent.reply(buildDialogue({ kind: 'backend', description: task.description }, []));
        await agent.close();
        const s = await t.prisma.session.create({
          data: { taskId: task.id, participantId: person.id, channel: 'console', status: 'active' },
        });
        const turn = await appendAgentTurn(t.prisma, s.id, {
          content: reply.text,
          rawOutput: reply.text,
          provenance: reply.provenance ?? null,
        });
        return t.prisma.turn.findUniqueOrThrow({ where: { id: turn.id }, include: { tokens: true } });
      };
      const on = await turnOf();
      expect(on.tokens).toMatchObject({ weightsVersion: 'qwen-7b@f00dcafe' });
      expect(on.tokens!.ids.length).toBeGreaterThan(0);

      const nothing = await sweetloop(['policy', 'update', 'rec']);
      expect(nothing.code).toBe(1);
      expect(nothing.stderr).toContain('--record-tokens or --no-record-tokens');
      const off = await sweetloop(['policy', 'update', 'rec', '--no-record-tokens']);
      expect(off.code, off.stderr).toBe(0);
      expect(off.stdout.trim()).toBe(`updated rec: ${plain.url} qwen-7b; its turns' tokens are not recorded`);
      expect((await row()).serving).toMatchObject({ recordTokens: false, revision: 'f00dcafe' });
      const audit = await t.prisma.auditLog.findFirstOrThrow({ where: { action: 'policy.update', target: 'rec' } });
      expect(audit.detail).toMatchObject({ changed: { recordTokens: { from: true, to: false } } });
      const offTurn = await turnOf();
      expect(offTurn.tokens).toBeNull();
      expect(offTurn.provenance).toMatchObject({ tokens: 'off' });

      const again = await sweetloop(['policy', 'update', 'rec', '--record-tokens', '--revision', 'beef']);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toContain("records each agent turn's tokens (revision beef)");
      expect((await turnOf()).tokens).toMatchObject({ weightsVersion: 'qwen-7b@beef' });
      expect(plain.chatRequests().map((r) => r.body.return_tokens_as_token_ids ?? false)).toEqual([true, false, true]);
    } finally {
      await plain.close();
    }
  });
});
