// `sweetloop doctor` in production reads the endpoint versions in service from the database (a removed one is
// not asked) and asks each server GET /v1/models: a real Postgres database and a real OpenAI-compatible server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDoctor } from '../../bin/doctor.ts';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { startOpenAiServer, type OpenAiServer } from '../../testing/openai-server.ts';
import { registerEndpointVersion } from '../../trainer/policies/registry.ts';
import { removeVersion } from '../../trainer/policies/lifecycle.ts';

let t: TestDatabase;
let server: OpenAiServer;

beforeAll(async () => {
  t = await createTestDatabase();
  server = await startOpenAiServer({ model: 'llama-8b' });
});
afterAll(async () => {
  await server.close();
  await t.drop();
});

describe('doctor: the registered endpoint versions', () => {
  it('asks every endpoint version in service, one line each, and none removed', async () => {
    await registerEndpointVersion(t.prisma, { name: 'served', url: server.url, model: 'llama-8b' });
    await registerEndpointVersion(t.prisma, {
      name: 'gone-away',
      url: 'http://127.0.0.1:1/v1',
      model: 'llama-8b',
      check: false,
      contextWindow: 4096,
    });
    await registerEndpointVersion(t.prisma, {
      name: 'removed-one',
      url: 'http://127.0.0.1:1/v1',
      model: 'llama-8b',
      check: false,
      contextWindow: 4096,
    });
    await removeVersion(t.prisma, 'removed-one', { actor: 'test' });
    const report = await runDoctor(
      {
        DATABASE_URL: t.url,
        DISCORD_TOKEN: 'not-a-token',
        DISCORD_API_BASE: 'http://127.0.0.1:1/api',
        DISCORD_OPERATOR_IDS: '123456789012345678',
        DISCORD_GUILD_IDS: '223456789012345678',
        EXPORT_SALT: 'a'.repeat(64),
        PRIVACY_KEY: 'b'.repeat(64),
      },
      { skip: ['tfjs backend', 'chromium', 'bubblewrap', 'python3', 'docker compose'] },
    );
    expect(report.checks.map((c) => [c.name, c.status])).toEqual([
      ['configuration', 'ok'],
      ['database', 'ok'],
      ['discord token', 'fail'],
      ['operators', 'ok'],
      ['guilds', 'ok'],
      ['export salt', 'ok'],
      ['privacy key', 'ok'],
      ['database password', 'ok'],
      ['endpoint served', 'ok'],
      ['endpoint gone-away', 'fail'],
    ]);
    expect(report.checks.find((c) => c.name === 'endpoint gone-away')!.detail).toMatch(/did not answer GET \/models/);
  });
});
