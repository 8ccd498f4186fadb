// `npm start` with DISCORD_TOKEN set: the whole composition (config, migration, seeding, policy deployment, the
// Discord bot) as a separate process, pointed by DISCORD_API_BASE at the fake Discord run by this test.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REAL_MODEL_COMMAND } from '../../../bot/bootstrap.ts';
import { FakeDiscord } from '../../../testing/fake-discord.ts';
import { createTestDatabase } from '../../../testing/database.ts';
import { makeTinyCheckpoint } from '../../../testing/tiny-checkpoint.ts';
import { openDatabase } from '../../../prisma/db.ts';
import { checkpointSha256 } from '../../../trainer/model/checkpoint.ts';
import { shippedStarterDir, starterVersionName } from '../../../trainer/recipes/starter.ts';
import { Terminal, consoleEnv, hasScript } from '../../helpers/terminal.ts';
import { runSweetloop, SWEETLOOP_ENTRY } from '../../../testing/sweetloop-cli.ts';

const ROOT = resolve(import.meta.dirname, '../../..');

describe('npm start with a Discord token', () => {
  let dir: string;
  let fake: FakeDiscord;
  let tdb: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sweetloop-cli-bot-'));
    tdb = await createTestDatabase();
    fake = await new FakeDiscord({ heartbeatIntervalMs: 1_000 }).start();
  });
  afterAll(async () => {
    await fake?.stop();
    await tdb?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('prepares the database, registers the commands, serves a person, and stops cleanly on SIGTERM', async () => {
    const ckpt = await makeTinyCheckpoint({ dir: join(dir, 'tiny'), maxPositionEmbeddings: 16384 });
    // A free port for the dashboard `npm start` serves beside the bot (DASHBOARD_PORT).
    const dashboardPort = await new Promise<number>((done) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const port = (probe.address() as { port: number }).port;
        probe.close(() => done(port));
      });
    });
    let out = '';
    const child = spawn(process.execPath, [SWEETLOOP_ENTRY, 'start'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DATABASE_URL: tdb.url,
        DISCORD_TOKEN: 'cli-test-token',
        // A Discord deployment refuses to start without its own secrets (bin/config-privacy.ts assertProductionSecrets).
        EXPORT_SALT: 'cli-test-export-salt-3f9a',
        PRIVACY_KEY: 'cli-test-privacy-key-8c2e',
        DISCORD_API_BASE: fake.apiBase,
        DISCORD_GUILD_IDS: fake.guildId,
        CONSENT_TEXT: 'CLI CONSENT TEXT',
        POLICY_MODEL_DIR: ckpt,
        CHECKPOINT_DIR: join(dir, 'checkpoints'),
        LOG_LEVEL: 'info',
        DASHBOARD_PORT: String(dashboardPort),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (out += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      await fake.waitFor(() => fake.commands.get(fake.guildId), 120_000, `commands registered; output:\n${out}`);
      expect(fake.identifies[0].token).toBe('cli-test-token');
      expect(await tdb.prisma.task.count()).toBeGreaterThan(0);
      const policy = await tdb.prisma.policyVersion.findFirstOrThrow({ where: { status: 'deployed' } });
      expect(policy.checkpointPath).toBe(ckpt);

      const user = fake.user('zoe');
      const start = fake.command(user, 'task', 'start', { kind: 'backend' });
      const consent = await fake.waitFor(
        () => fake.replies(start).find((s) => s.kind === 'original'),
        30_000,
        'consent',
      );
      expect(consent.content).toContain('CLI CONSENT TEXT');
      const accept = fake.click(user, consent, 'consent:accept:backend');
      const hidden = await fake.waitFor(
        () => fake.replies(accept).find((s) => s.content.includes('Only you can see this')),
        60_000,
        'hidden info',
      );
      const threadId = /<#(\d+)>/.exec(hidden.content)![1]!;
      await fake.waitFor(
        () => fake.inChannel(threadId).find((s) => s.content.startsWith('**Agent**')),
        120_000,
        "the policy's first message",
      );
      expect(out).not.toContain('cli-test-token'); // the token never reaches the logs
      // The dashboard runs beside the bot, on loopback: 401 without its login link, printed once at start (and
      // never in a log line); with it, it lists the session just started.
      expect((await fetch(`http://127.0.0.1:${dashboardPort}/sessions`)).status).toBe(401);
      const link = /Dashboard login link.*: (http:\S+)/.exec(out)![1]!;
      const token = new URL(link).searchParams.get('token')!;
      expect(out.split(token).length - 1, 'printed once').toBe(1);
      const sessions = await fetch(`http://127.0.0.1:${dashboardPort}/sessions`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(sessions.status).toBe(200);
      expect(await sessions.text()).toMatch(/Sessions <span class="meta">1 found/);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });
});

// `npm start` as a new user's first run: no configuration, no Discord token, a machine without Chromium and
// bubblewrap, in a terminal. It reaches the console's first question on the shipped starter (installed, not
// trained), says once what is missing and the one command that installs it, logs readable lines, and asks for
// the console's own consent (no Discord id, no `/privacy delete`).
describe.skipIf(!hasScript)('npm start on a first run', () => {
  let dir: string;
  let term: Terminal | undefined;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sweetloop-first-run-'));
  });
  afterAll(async () => {
    term?.kill();
    await rm(dir, { recursive: true, force: true });
  });

  it('reaches the first question on the shipped starter and explains what is missing', async () => {
    const env = consoleEnv(dir, { CHROMIUM_PATH: join(dir, 'no-chromium'), BWRAP_BIN: join(dir, 'no-bwrap') });
    term = new Terminal('npm start --silent', env, ROOT);
    let at = await term.expect('lacks what some of it needs');
    at = await term.expect('apt-get install -y chromium bubblewrap', at);
    const consentFrom = await term.expect('collaborate with the agent on a task.', at);
    at = await term.expect('Do you accept? [y/N]', consentFrom);
    const consent = term.out.slice(consentFrom, at);
    expect(consent).toContain('Sweetloop records this conversation');
    expect(consent).not.toMatch(/Discord|\/privacy/);
    term.type('y');
    at = await term.expect('Which kind of task?', at);
    term.type('q');
    expect(await term.exited).toBe(0);

    expect(term.out.match(/lacks what some of it needs/g)).toHaveLength(1);
    expect(term.out.split(/\r?\n/).filter((line) => line.trimStart().startsWith('{'))).toEqual([]); // no JSON log line
    expect(term.out).not.toContain('starter policy ['); // no training progress bar
    // Says what the starter is, before the consent, and the one command that puts a real model in its seat.
    const notice = term.out.slice(0, consentFrom);
    expect(notice).toContain('a smoke test of 1.0M parameters');
    expect(notice.replace(/\r/g, '')).toContain(`    ${REAL_MODEL_COMMAND}\n`);

    const shippedSha = await checkpointSha256(shippedStarterDir(1234));
    const db = await openDatabase({ pgliteDir: join(dir, 'pglite') });
    try {
      const policy = await db.prisma.policyVersion.findFirstOrThrow({ where: { status: 'deployed' } });
      expect(policy).toMatchObject({
        algorithm: 'starter',
        name: starterVersionName(shippedSha),
        checkpointSha256: shippedSha,
        checkpointPath: resolve(dir, 'checkpoints', 'starter'),
      });
    } finally {
      await db.close();
    }
  });
});

// A service (a container, systemd) runs `sweetloop bot` or `sweetloop start` with no terminal: without
// DISCORD_TOKEN neither may fall back to a console that reads end-of-input and exits 0 (a restart policy would
// repeat that forever). Each exits 2 at once with one line naming the setting, having created nothing.
describe('sweetloop bot and start without DISCORD_TOKEN or a terminal', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sweetloop-no-token-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ['bot', 'is not set: the Discord bot needs its bot token'],
    ['start', 'is not set, and without a terminal there is no console to fall back to'],
  ])('`sweetloop %s` exits 2 with one line naming DISCORD_TOKEN', async (command, reason) => {
    const env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DISCORD_TOKEN: '',
      PGLITE_DIR: join(dir, 'pglite'),
      CHECKPOINT_DIR: join(dir, 'checkpoints'),
      LOG_FORMAT: 'json',
    };
    const r = await runSweetloop([command], { env, cwd: dir, timeoutMs: 60_000 });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^Invalid configuration: DISCORD_TOKEN: ${reason}`)),
    ]);
    expect(existsSync(join(dir, 'pglite'))).toBe(false);
    expect(existsSync(join(dir, 'checkpoints'))).toBe(false);
  });
});
