// `sweetloop doctor` in production (DISCORD_TOKEN set): the token against the fake Discord (real HTTP), endpoint
// versions against a real OpenAI-compatible server, operators, and the published secrets; one line each.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkDiscordToken,
  checkEndpoints,
  checkGuilds,
  checkOperators,
  checkSecrets,
  tokenShape,
} from '../../bin/doctor-production.ts';
import { formatReport, runDoctor } from '../../bin/doctor.ts';
import { parseConfig } from '../../bin/config.ts';
import { PUBLIC_SECRETS } from '../../bin/config-privacy.ts';
import { FakeDiscord } from '../../testing/fake-discord.ts';
import { startOpenAiServer, type OpenAiServer } from '../../testing/openai-server.ts';

// The token the fake Discord accepts (its first part is a bot id, as a real token's is).
const BOT_ID = '112233445566778899';
const tokenFor = (id: string) => `${Buffer.from(id).toString('base64url')}.GhJk1a.${'x'.repeat(27)}`;
let discord: FakeDiscord;
let server: OpenAiServer;
let keyed: OpenAiServer;

beforeAll(async () => {
  discord = await new FakeDiscord({ token: tokenFor(BOT_ID) }).start();
  server = await startOpenAiServer({ model: 'llama-8b' });
  keyed = await startOpenAiServer({ model: 'llama-8b', apiKey: 'sekret' });
});
afterAll(async () => {
  await discord.stop();
  await server.close();
  await keyed.close();
});

describe('doctor in production', () => {
  it('the token: its form first, then what Discord answers', async () => {
    const api = `http://127.0.0.1:${discord.port}/api`;
    expect(tokenShape('not-a-token')).toEqual({ problem: expect.stringMatching(/three base64url parts/) });
    expect(tokenShape(`Bot ${tokenFor(BOT_ID)}`)).toEqual({ problem: expect.stringMatching(/starts with "Bot "/) });
    expect(tokenShape(`${Buffer.from('hello').toString('base64url')}.a.b`)).toEqual({
      problem: expect.stringMatching(/not a bot id/),
    });

    const malformed = await checkDiscordToken({ DISCORD_TOKEN: 'abc', DISCORD_API_BASE: api });
    expect(malformed).toMatchObject({ status: 'fail', detail: expect.stringMatching(/^DISCORD_TOKEN is malformed/) });

    const good = await checkDiscordToken({ DISCORD_TOKEN: tokenFor(BOT_ID), DISCORD_API_BASE: api });
    expect(good, good.detail).toMatchObject({
      status: 'ok',
      detail: `Discord accepts it: bot sweetloop (${discord.appId})`,
    });

    // Well formed, but not this application's: Discord answers 401.
    const wrong = await checkDiscordToken({ DISCORD_TOKEN: tokenFor('123456789012345678'), DISCORD_API_BASE: api });
    expect(wrong).toMatchObject({ status: 'fail', detail: expect.stringMatching(/Discord refused it \(401/) });

    const unreachable = await checkDiscordToken({
      DISCORD_TOKEN: tokenFor(BOT_ID),
      DISCORD_API_BASE: 'http://127.0.0.1:1/api',
    });
    expect(unreachable).toMatchObject({ status: 'warn', detail: expect.stringMatching(/could not be reached/) });
  });

  it('each endpoint version: its server lists its model (GET /v1/models), with its key', async () => {
    process.env.DOCTOR_TEST_KEY = 'sekret';
    const checks = await checkEndpoints([
      { name: 'llama-8b', url: server.url, model: 'llama-8b', apiKeyEnv: null },
      { name: 'wrong-model', url: server.url, model: 'qwen-7b', apiKeyEnv: null },
      { name: 'keyed', url: keyed.url, model: 'llama-8b', apiKeyEnv: 'DOCTOR_TEST_KEY' },
      { name: 'down', url: 'http://127.0.0.1:1/v1', model: 'llama-8b', apiKeyEnv: null },
    ]);
    expect(checks.map((c) => [c.name, c.status])).toEqual([
      ['endpoint llama-8b', 'ok'],
      ['endpoint wrong-model', 'fail'],
      ['endpoint keyed', 'ok'],
      ['endpoint down', 'fail'],
    ]);
    expect(checks[1]!.detail).toMatch(/does not serve a model named "qwen-7b"; it serves: llama-8b/);
    expect(checks[3]!.fix).toMatch(/sweetloop policy update down --endpoint URL/);
    expect(server.requests.some((r) => r.path === '/v1/models')).toBe(true);
    expect(await checkEndpoints([])).toEqual([expect.objectContaining({ name: 'endpoints', status: 'ok' })]);
  });

  it('operators, the export salt and the privacy key', () => {
    expect(checkOperators(parseConfig({})).status).toBe('warn');
    expect(checkOperators(parseConfig({ DISCORD_OPERATOR_ROLE_IDS: '123456789012345678' }))).toMatchObject({
      status: 'ok',
      detail: '0 operator id(s), 1 operator role(s)',
    });
    for (const published of PUBLIC_SECRETS) {
      const [salt, key] = checkSecrets(
        parseConfig({ EXPORT_SALT: published, PRIVACY_KEY: `${published}${published}` }),
      );
      expect(salt!.status).toBe('fail');
      expect(key!.status).toBe('ok');
    }
    expect(checkSecrets(parseConfig({})).map((c) => c.status)).toEqual(['fail', 'fail', 'ok']);
    expect(
      checkSecrets(parseConfig({ EXPORT_SALT: 'a'.repeat(64), PRIVACY_KEY: 'b'.repeat(64) })).map((c) => c.status),
    ).toEqual(['ok', 'ok', 'ok']);
  });

  it("the guild allowlist (empty fails, * warns) and compose's published database password", () => {
    expect(checkGuilds(parseConfig({}))).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/refuses to start/),
    });
    expect(checkGuilds(parseConfig({ DISCORD_GUILD_IDS: '*' }))).toMatchObject({
      status: 'warn',
      detail: expect.stringMatching(/any server/),
    });
    expect(checkGuilds(parseConfig({ DISCORD_GUILD_IDS: '123456789012345678' }))).toMatchObject({
      status: 'ok',
      detail: '1 guild(s) allowed; the bot leaves any other',
    });
    const db = (url: string) => checkSecrets(parseConfig({ DATABASE_URL: url }))[2]!;
    expect(db('postgres://sweetloop:sweetloop@postgres:5432/sweetloop')).toMatchObject({
      name: 'database password',
      status: 'fail',
      fix: expect.stringMatching(/POSTGRES_PASSWORD/),
    });
    expect(db('postgres://sweetloop:0a9b8c7d6e5f@postgres:5432/sweetloop').status).toBe('ok');
    expect(db('postgres://postgres@127.0.0.1:5432/x').status).toBe('ok');
  });

  it('runs them all only with DISCORD_TOKEN set, each on its own line', async () => {
    const skip = ['database', 'tfjs backend', 'chromium', 'bubblewrap', 'python3', 'docker compose', 'endpoints'];
    const consoleMode = await runDoctor({}, { skip });
    expect(consoleMode.checks.map((c) => c.name)).toEqual(['configuration']);
    const report = await runDoctor(
      { DISCORD_TOKEN: tokenFor(BOT_ID), DISCORD_API_BASE: `http://127.0.0.1:${discord.port}/api` },
      { skip },
    );
    expect(report.checks.map((c) => [c.name, c.status])).toEqual([
      ['configuration', 'ok'],
      ['discord token', 'ok'],
      ['operators', 'warn'],
      ['guilds', 'fail'],
      ['export salt', 'fail'],
      ['privacy key', 'fail'],
      ['database password', 'ok'],
    ]);
    expect(report.ok).toBe(false);
    const text = formatReport(report);
    expect(text).toMatch(/^\[warn\] operators: none configured: nobody can deploy/m);
    expect(text).toMatch(/^\[FAIL\] privacy key: PRIVACY_KEY is not set/m);
    expect(text).toMatch(/fix: set PRIVACY_KEY to a secret of your own: `openssl rand -hex 32`/);
  });
});
