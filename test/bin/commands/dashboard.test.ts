// `sweetloop dashboard` and `sweetloop dashboard token create|list|revoke` as a person runs them (real processes on
// a real Postgres database): a token is printed once and only its hash stored; the server refuses to listen beyond
// loopback while no token exists, and with one it answers 401 without it and 200 with it.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { runSweetloop, SWEETLOOP_ENTRY, type SweetloopRun } from '../../../testing/sweetloop-cli.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t?.drop());

const env = () => {
  const base = { ...process.env };
  for (const k of ['DISCORD_TOKEN', 'DATABASE_URL', 'DASHBOARD_PORT', 'DASHBOARD_HOST']) delete base[k];
  return { ...base, LOG_LEVEL: 'warn', DATABASE_URL: t.url };
};
const sweetloop = (args: string[]): Promise<SweetloopRun> => runSweetloop(args, { env: env(), timeoutMs: 120_000 });

/** Starts `sweetloop dashboard ARGS` and resolves with its URL once it prints it, or with its output when it exits. */
function serve(
  args: string[],
): Promise<{ url: string | null; output: string; stop: () => void; code: Promise<number | null> }> {
  const child = spawn(process.execPath, [SWEETLOOP_ENTRY, 'dashboard', ...args], {
    env: env(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const code = new Promise<number | null>((resolve) => child.on('close', resolve));
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGTERM'), 60_000);
    const done = (url: string | null) => {
      clearTimeout(timer);
      resolve({ url, output, stop: () => child.kill('SIGTERM'), code });
    };
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      output += d;
      // On loopback the login link follows the address.
      const m = /Dashboard: (http:\S+)\n(?:.*login.*\n)?/.exec(output);
      if (m && (args.includes('0.0.0.0') || /login\?token=/.test(output))) done(m[1]!);
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    void code.then(() => done(null));
  });
}

describe('sweetloop dashboard', () => {
  it('on loopback prints a login link once and asks every other request for a token', async () => {
    const s = await serve(['--port', '0']);
    try {
      expect(s.url, s.output).not.toBeNull();
      const link = /Log in by opening this link once.*: (http:\S+)/.exec(s.output)![1]!;
      expect(new URL(link).searchParams.get('token')).toMatch(/^sld_/);
      expect((await fetch(`${s.url}sessions`)).status).toBe(401);
      const login = await fetch(link, { redirect: 'manual' });
      expect(login.status).toBe(303);
      expect(
        (await fetch(`${s.url}sessions`, { headers: { cookie: login.headers.get('set-cookie')!.split(';')[0]! } }))
          .status,
      ).toBe(200);
      expect(s.output.split(new URL(link).searchParams.get('token')!).length - 1, 'printed once').toBe(1);
    } finally {
      s.stop();
      await s.code;
    }
  });

  it('refuses to listen beyond loopback while no token exists', async () => {
    const s = await serve(['--host', '0.0.0.0', '--port', '0']);
    expect(s.url).toBeNull();
    expect(await s.code).toBe(1);
    expect(s.output).toMatch(/refusing to listen on 0\.0\.0\.0.*sweetloop dashboard token create/s);
  });

  it('creates a token shown once, stores its hash, serves with it, and revokes it', async () => {
    const bad = await sweetloop(['dashboard', 'token', 'create', '--role', 'moderator']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('a moderator token needs --guild ID');
    const r = await sweetloop(['dashboard', 'token', 'create', '--role', 'operator']);
    expect(r.code, r.stderr).toBe(0);
    const secret = /^(sld_\S+)$/m.exec(r.stdout)![1]!;
    const row = await t.prisma.dashboardToken.findFirstOrThrow();
    expect(row.tokenSha256).toBe(createHash('sha256').update(secret).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(secret);
    const list = await sweetloop(['dashboard', 'token', 'list']);
    expect(list.stdout).toContain(row.prefix);
    expect(list.stdout).not.toContain(secret);

    const s = await serve(['--host', '0.0.0.0', '--port', '0']);
    try {
      expect(s.url, s.output).not.toBeNull();
      const base = `http://127.0.0.1:${new URL(s.url!).port}`;
      expect((await fetch(`${base}/sessions`)).status).toBe(401);
      expect((await fetch(`${base}/sessions`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(200);
      const revoke = await sweetloop(['dashboard', 'token', 'revoke', row.prefix]);
      expect(revoke.code, revoke.stderr).toBe(0);
      expect((await fetch(`${base}/sessions`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(401);
    } finally {
      s.stop();
      await s.code;
    }
  });
});
