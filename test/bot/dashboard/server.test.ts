// The dashboard's access rules and pages over a real Postgres database and a real listening server: on loopback the
// login link made at start is needed (an operator then), beyond loopback every request needs a live token (401
// otherwise), no token reaches the log, a moderator's token sees one guild,
// no platform id appears outside the operators' payouts page, writes need a CSRF token and leave an audit row, and
// what people typed is escaped. The browser checks are in test/bot/dashboard/browser.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import {
  GUILD_A,
  GUILD_B,
  GUILD_B_MARKER,
  PERSON_A,
  PERSON_B,
  seedDashboardData,
  type DashboardData,
} from '../../../testing/dashboard-data.ts';
import { buildDashboard, DashboardRefused, startDashboard } from '../../../bot/dashboard/server.ts';
import { newTokenSecret, isLoopbackHost, loopbackHostHeader } from '../../../bot/dashboard/access.ts';
import { createDashboardToken, revokeDashboardToken, DashboardTokenError } from '../../../prisma/dashboard-store.ts';
import { pseudonymize } from '../../../bot/export/pseudonym.ts';
import { PassThrough } from 'node:stream';
import { createLogger } from '../../../bin/log.ts';
import { openDatabase } from '../../../prisma/db.ts';
import { TcpProxy } from '../../../testing/tcp-proxy.ts';
import { PASTE_FLAG_REASON } from '../../../prisma/quality-store.ts';
import { judgementsDigest, policiesOverview, preferenceJudgements } from '../../../bot/dashboard/overview.ts';

const SALT = 'dashboard-test-salt';
const PAGES = ['/studies', '/sessions', '/policies', '/runs', '/people', '/calibration', '/flags'];
let t: TestDatabase;
let data: DashboardData;

beforeAll(async () => {
  t = await createTestDatabase();
  data = await seedDashboardData(t.db);
}, 120_000);
afterAll(() => t?.drop());

async function token(role: 'operator' | 'moderator', guildId: string | null): Promise<string> {
  const s = newTokenSecret();
  await createDashboardToken(t.prisma, 'test', { role, guildId, tokenSha256: s.sha256, prefix: s.prefix });
  return s.secret;
}

describe('the address rules', () => {
  it('knows loopback addresses and Host headers', () => {
    expect(['127.0.0.1', '127.3.4.5', '::1', '[::1]', 'localhost'].map(isLoopbackHost)).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(['0.0.0.0', '192.168.1.2', '::', 'example.org'].map(isLoopbackHost)).toEqual([false, false, false, false]);
    expect(['127.0.0.1:8080', 'localhost:1', '[::1]:80'].map(loopbackHostHeader)).toEqual([true, true, true]);
    expect(['evil.example:8080', 'evil.example', undefined].map(loopbackHostHeader)).toEqual([false, false, false]);
  });
});

describe('on loopback', () => {
  let base: string;
  let loginUrl: string;
  let cookie = '';
  let close: () => Promise<unknown>;
  /** A request with the cookie the login link set. */
  const signedIn = (url: string, init: RequestInit = {}) =>
    fetch(url, { ...init, headers: { cookie, ...(init.headers as Record<string, string> | undefined) } });
  beforeAll(async () => {
    const d = await startDashboard({
      db: t.db,
      host: '127.0.0.1',
      port: 0,
      salt: SALT,
      chromiumPath: '/usr/bin/chromium',
    });
    base = d.url.replace(/\/$/, '');
    loginUrl = d.loginUrl!;
    close = () => d.app.close();
  });
  afterAll(() => close?.());

  it('asks for a token there too, and takes the login link made at start (once: it becomes a cookie)', async () => {
    expect(loginUrl).toMatch(new RegExp(`^${base}/login\\?token=sld_[A-Za-z0-9_-]{40,}$`));
    for (const path of [...PAGES, '/payouts', `/sessions/${data.sessionA}`]) {
      const r = await fetch(base + path, { redirect: 'manual' });
      expect(r.status, path).toBe(401);
      expect(await r.text()).toContain('Open the login link the dashboard printed');
    }
    expect((await fetch(`${base}/login?token=sld_wrong-guess-of-the-token`, { redirect: 'manual' })).status).toBe(401);
    const login = await fetch(loginUrl, { redirect: 'manual' });
    expect(login.status).toBe(303);
    cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    expect((await signedIn(`${base}/studies`)).status).toBe(200);
    // Another dashboard process has its own secret: this one's cookie opens nothing there.
    const other = await startDashboard({
      db: t.db,
      host: '127.0.0.1',
      port: 0,
      salt: SALT,
      chromiumPath: '/usr/bin/chromium',
    });
    try {
      expect(other.loginUrl).not.toBe(loginUrl);
      expect((await fetch(`${other.url}studies`, { headers: { cookie } })).status).toBe(401);
    } finally {
      await other.app.close();
    }
  });

  it('never writes a token to the log, even when a database error fails the login request', async () => {
    const proxy = new TcpProxy(Number(new URL(t.url).port || 5432));
    await proxy.up();
    const u = new URL(t.url);
    u.port = String(proxy.port);
    const db = await openDatabase({ databaseUrl: u.toString(), pgliteDir: '/nonexistent' });
    const out = new PassThrough();
    let logged = '';
    out.on('data', (d: Buffer) => (logged += d.toString('utf8')));
    const log = createLogger({ LOG_LEVEL: 'info', LOG_FORMAT: 'json' }, 'dashboard-test', { destination: out });
    const app = await buildDashboard({
      db,
      host: '127.0.0.1',
      port: 0,
      salt: SALT,
      chromiumPath: '/usr/bin/chromium',
      log,
    });
    try {
      await proxy.down();
      const secret = newTokenSecret().secret;
      const r = await app.inject({
        method: 'GET',
        url: `/login?token=${encodeURIComponent(secret)}`,
        headers: { host: '127.0.0.1' },
      });
      expect(r.statusCode).toBe(500);
      await new Promise((resolve) => setImmediate(resolve));
      expect(logged).toContain('dashboard request failed');
      expect(logged).toContain('/login');
      expect(logged).not.toContain(secret);
      expect(logged).not.toContain(secret.slice(4, 20));
    } finally {
      await app.close();
      await db.close().catch(() => {});
    }
  });

  it('serves every page to the person at the machine, as an operator, with no platform id but on the payouts page', async () => {
    for (const path of [...PAGES, `/sessions/${data.sessionA}`, `/sessions/${data.sessionB}`]) {
      const r = await signedIn(base + path);
      expect(r.status, path).toBe(200);
      const html = await r.text();
      for (const id of [PERSON_A, PERSON_B, GUILD_A, GUILD_B]) expect(html, `${path} shows ${id}`).not.toContain(id);
      expect(r.headers.get('content-security-policy')).toContain("default-src 'none'");
    }
    const people = await (await signedIn(`${base}/people`)).text();
    expect(people).toContain(pseudonymize(PERSON_A, SALT).slice(0, 12));
    const payouts = await (await signedIn(`${base}/payouts`)).text();
    expect(payouts).toContain(PERSON_A);
    expect(payouts).toContain(PERSON_B);
  });

  it('refuses a request that names another host (DNS rebinding)', async () => {
    const app = await buildDashboard({
      db: t.db,
      host: '127.0.0.1',
      port: 0,
      salt: SALT,
      chromiumPath: '/usr/bin/chromium',
    });
    const r = await app.inject({ method: 'GET', url: '/sessions', headers: { host: 'evil.example:8080' } });
    expect(r.statusCode).toBe(403);
    await app.close();
  });

  it('shows a session whole: task, hidden reference, provenance, tests with expected and actual, rating, flag, critic advantages', async () => {
    const html = await (await signedIn(`${base}/sessions/${data.sessionA}`)).text();
    expect(html).toContain('def add0(x):\n    return x + 0');
    expect(html).toContain('llama-3.1-8b-instruct');
    expect(html).toContain('+ adapter sweet-0001');
    expect(html).toContain('1 turn(s) trimmed to fit the window');
    expect(html).toContain('exact tokens recorded: 3 (weights adapter:sweet-0001)');
    expect(html.split('exact tokens recorded')).toHaveLength(2);
    expect(html).toMatch(/add0\(-1\)<\/pre><\/td><td><pre>-1<\/pre><\/td><td><pre>&#39;oops&#39;<\/pre>/);
    expect(html).toContain('data-advantage="0.412"');
    expect(html).toContain('data-advantage="-0.137"');
    expect(html).toContain('check the markup in the reply');
    expect(html).toContain('<strong>2/5</strong>');
    expect(html).toContain('first token 72 ms');
    expect(html).not.toContain('71.749');
  });

  it('says when each study is projected to end in words, not as a state slug', async () => {
    const html = await (await signedIn(`${base}/studies`)).text();
    const cells = [...html.matchAll(/<td>([^<]*)<\/td>\s*<td class="n">[^<]*<\/td><\/tr>/g)].map((m) => m[1]);
    expect(cells.length).toBeGreaterThan(0);
    for (const cell of cells) {
      expect(['no-k', 'not-enough-data', 'complete', 'projected']).not.toContain(cell);
      expect(cell).toMatch(/^(none \(no k|complete \(every task|not enough data yet \(|\d{4}-\d\d-\d\d)/);
    }
  });

  it('escapes what people typed', async () => {
    const html = await (await signedIn(`${base}/sessions/${data.sessionA}`)).text();
    expect(html).not.toContain('<script>window');
    expect(html).not.toContain('<img src=x');
    expect(html).not.toContain('href="javascript:');
    expect(html).toContain('&lt;script&gt;window.__pwned');
  });

  it('filters and pages the session list, and says what is wrong with a bad filter', async () => {
    const all = await (await signedIn(`${base}/sessions`)).text();
    expect(all).toMatch(/Sessions <span class="meta">23 found/);
    const flagged = await (await signedIn(`${base}/sessions?flag=open`)).text();
    expect(flagged).toMatch(/1 found/);
    expect(flagged).toContain(data.sessionA);
    const person = pseudonymize(PERSON_B, SALT);
    const byPerson = await (await signedIn(`${base}/sessions?person=${person.slice(0, 10)}`)).text();
    expect(byPerson).toMatch(/1 found/);
    expect(byPerson).toContain(data.sessionB);
    const frontend = await (await signedIn(`${base}/sessions?kind=frontend&outcome=failure`)).text();
    expect(frontend).toContain(data.frontendSession);
    const bad = await signedIn(`${base}/sessions?rating=9`);
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('rating: 1 to 5, got &quot;9&quot;');
  });

  it('shows the leaderboard paired by task and the Bradley-Terry fit with intervals', async () => {
    const html = await (await signedIn(`${base}/policies`)).text();
    const board = /<table class="leaderboard" data-kind="backend">([\s\S]*?)<\/table>/.exec(html)![1]!;
    // sweet-0001 plays better on every task: first, and its paired difference against the deployed starter is positive.
    expect(board.indexOf('sweet-0001')).toBeLessThan(board.indexOf('starter</td>'));
    expect(board).toMatch(/sweet-0001<\/td><td class="n">0\.\d{3} \[0\.\d{3}, 0\.\d{3}\]/);
    expect(board).toMatch(/0\.\d{3} \[-?0\.\d{3}, 0\.\d{3}\] over 5 tasks/);
    const bt = /<table class="bradley-terry">([\s\S]*?)<\/table>/.exec(html)![1]!;
    expect(bt.indexOf('sweet-0001')).toBeLessThan(bt.indexOf('starter'));
    expect(bt).toMatch(/\d+ \[\d+, \d+\]/);
  });

  it('shows the latest calibration of a study, its table and its figure', async () => {
    const html = await (await signedIn(`${base}/calibration`)).text();
    expect(html).toContain('against rule-simulator');
    expect(html).toMatch(
      /<td>agent turns<\/td><td class="n">7\.00<\/td><td class="n">3\.40<\/td><td class="n">\+3\.60 \[\+\d\.\d\d, \+\d\.\d\d\]<\/td><td class="n">5<\/td>/,
    );
    const src = /<img alt="calibration figure"[^>]* src="([^"]+)"/.exec(html)![1]!;
    const svg = await signedIn(base + src);
    expect(svg.status).toBe(200);
    expect(svg.headers.get('content-type')).toContain('image/svg+xml');
    expect(await svg.text()).toContain('Study pilot: people against rule-simulator');
  });

  it('takes a write only with the CSRF token, and audits it', async () => {
    const alice = await t.prisma.participant.findUniqueOrThrow({ where: { discordUserId: PERSON_A } });
    const post = (body: Record<string, string>) =>
      signedIn(`${base}/people/${alice.id}/training`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(body).toString(),
      });
    expect((await post({ action: 'exclude', reason: 'test' })).status).toBe(403);
    expect((await post({ action: 'exclude', reason: 'test', csrf: 'forged' })).status).toBe(403);
    expect(await t.prisma.trainingExclusion.count()).toBe(0);
    const csrf = /name="csrf" value="([^"]+)"/.exec(await (await signedIn(`${base}/people`)).text())![1]!;
    const r = await post({ action: 'exclude', reason: 'pasted the reference', csrf });
    expect(r.status).toBe(303);
    expect(await t.prisma.trainingExclusion.count({ where: { participantId: alice.id } })).toBe(1);
    const audit = await t.prisma.auditLog.findFirstOrThrow({ where: { action: 'dashboard.training.exclude' } });
    expect(audit).toMatchObject({ actor: 'dashboard:loopback', target: alice.id });
    expect((await post({ action: 'include', csrf })).status).toBe(303);
    expect(await t.prisma.trainingExclusion.count()).toBe(0);
  });
});

describe('the Flags page', () => {
  const operator = { role: 'operator', guildId: null, actor: 'op', principal: 'op' } as const;
  const moderatorOfA = { role: 'moderator', guildId: GUILD_A, actor: 'mod-a', principal: 'mod-a' } as const;
  it('lists open flags for a moderator to confirm (the session stays out) or clear (it counts again), within their guild', async () => {
    {
      const { openFlags, actOnFlag } = await import('../../../bot/dashboard/flags.ts');
      const a = await t.prisma.moderationFlag.create({ data: { sessionId: data.sessionA, reason: PASTE_FLAG_REASON } });
      const b = await t.prisma.moderationFlag.create({ data: { sessionId: data.sessionB, reason: 'off-topic' } });
      const listed = await openFlags(t.prisma, moderatorOfA, SALT);
      expect(listed.map((f) => f.id)).toContain(a.id);
      expect(listed.map((f) => f.id)).not.toContain(b.id);
      expect(listed.find((f) => f.id === a.id)).toMatchObject({
        automatic: true,
        person: pseudonymize(PERSON_A, SALT),
        confirmed: null,
      });
      // Not in their guild: nothing happens.
      expect(await actOnFlag(t.prisma, moderatorOfA, b.id, 'clear', null)).toBe(false);
      expect(await actOnFlag(t.prisma, moderatorOfA, a.id, 'confirm', 'copied the code')).toBe(true);
      expect((await openFlags(t.prisma, moderatorOfA, SALT)).find((f) => f.id === a.id)!.confirmed).toMatchObject({
        by: 'mod-a',
      });
      expect((await t.prisma.moderationFlag.findUniqueOrThrow({ where: { id: a.id } })).resolvedAt).toBeNull();
      expect(await actOnFlag(t.prisma, operator, b.id, 'clear', 'fine after all')).toBe(true);
      expect((await t.prisma.moderationFlag.findUniqueOrThrow({ where: { id: b.id } })).resolvedReason).toBe(
        'fine after all',
      );
      expect((await openFlags(t.prisma, operator, SALT)).map((f) => f.id)).not.toContain(b.id);
      // Closed again so that the other tests see the data they seeded (the page is served in "every page" above).
      await t.prisma.moderationFlag.update({
        where: { id: a.id },
        data: { resolvedAt: new Date(), resolvedBy: 'test' },
      });
    }
  });
});

describe('beyond loopback', () => {
  it('refuses to listen while no live token exists', async () => {
    await expect(
      startDashboard({ db: t.db, host: '0.0.0.0', port: 0, salt: SALT, chromiumPath: '/usr/bin/chromium' }),
    ).rejects.toThrow(DashboardRefused);
  });

  it('stores only a hash, refuses a moderator token without a guild, and ends a revoked token', async () => {
    await expect(
      createDashboardToken(t.prisma, 'test', { role: 'moderator', guildId: null, tokenSha256: 'x', prefix: 'x' }),
    ).rejects.toThrow(DashboardTokenError);
    const secret = await token('operator', null);
    const rows = await t.prisma.dashboardToken.findMany();
    expect(JSON.stringify(rows)).not.toContain(secret);
    expect(await t.prisma.auditLog.count({ where: { action: 'dashboard.token.create' } })).toBeGreaterThan(0);
    expect(await revokeDashboardToken(t.prisma, 'test', secret.slice(0, 12))).toBe(true);
    expect(await revokeDashboardToken(t.prisma, 'test', secret.slice(0, 12))).toBe(false);
  });

  describe('with tokens', () => {
    let base: string;
    let close: () => Promise<unknown>;
    let operator: string, moderatorA: string, revoked: string;
    beforeAll(async () => {
      operator = await token('operator', null);
      moderatorA = await token('moderator', GUILD_A);
      revoked = await token('operator', null);
      await revokeDashboardToken(t.prisma, 'test', revoked.slice(0, 12));
      const d = await startDashboard({
        db: t.db,
        host: '0.0.0.0',
        port: 0,
        salt: SALT,
        chromiumPath: '/usr/bin/chromium',
      });
      base = `http://127.0.0.1:${new URL(d.url).port}`;
      close = () => d.app.close();
    });
    afterAll(() => close?.());
    const get = (path: string, secret?: string) =>
      fetch(base + path, { redirect: 'manual', headers: secret ? { authorization: `Bearer ${secret}` } : {} });

    it('answers 401 to every page without a live token', async () => {
      const paths = [
        '/',
        ...PAGES,
        '/payouts',
        `/sessions/${data.sessionA}`,
        `/sessions/${data.frontendSession}/screenshot/target`,
        '/no-such-page',
        '/login?token=sld_wrong',
      ];
      for (const p of paths) {
        expect((await get(p)).status, p).toBe(401);
        expect((await get(p, 'sld_not-a-token')).status, p).toBe(401);
        expect((await get(p, revoked)).status, p).toBe(401);
      }
      const post = await fetch(`${base}/people/${data.sessionA}/training`, {
        method: 'POST',
        body: 'action=exclude',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(post.status).toBe(401);
    });

    it('lets an operator in by header or by the login link, which moves the token into a cookie', async () => {
      expect((await get('/sessions', operator)).status).toBe(200);
      const login = await get(`/login?token=${encodeURIComponent(operator)}`);
      expect(login.status).toBe(303);
      const cookie = login.headers.get('set-cookie')!;
      expect(cookie).toMatch(/HttpOnly; SameSite=Strict/);
      const r = await fetch(`${base}/payouts`, { headers: { cookie: cookie.split(';')[0]! } });
      expect(r.status).toBe(200);
      expect(await r.text()).toContain(PERSON_B);
    });

    it('shows a moderator their guild only, and no payouts', async () => {
      const list = await (await get('/sessions', moderatorA)).text();
      expect(list).toContain(data.sessionA);
      expect(list).not.toContain(data.sessionB);
      expect(list).not.toContain(data.frontendSession);
      expect((await get(`/sessions/${data.sessionB}`, moderatorA)).status).toBe(404);
      const other = await (await get(`/sessions/${data.sessionA}`, moderatorA)).text();
      expect(other).not.toContain(GUILD_B_MARKER);
      const people = await (await get('/people', moderatorA)).text();
      expect(people).toContain(pseudonymize(PERSON_A, SALT).slice(0, 12));
      expect(people).not.toContain(pseudonymize(PERSON_B, SALT).slice(0, 12));
      expect((await get('/payouts', moderatorA)).status).toBe(403);
      // The leaderboard counts their guild's sessions only: the starter played only simulated games (no guild).
      const board =
        /<table class="leaderboard" data-kind="backend">([\s\S]*?)<\/table>/.exec(
          await (await get('/policies', moderatorA)).text(),
        )?.[1] ?? '';
      expect(board).not.toContain('starter</td>');
      for (const p of [...PAGES, `/sessions/${data.sessionA}`]) {
        const html = await (await get(p, moderatorA)).text();
        for (const id of [PERSON_A, PERSON_B, GUILD_A, GUILD_B]) expect(html, `${p} shows ${id}`).not.toContain(id);
      }
    });

    it('does not let a moderator act on a person outside their guild', async () => {
      const bob = await t.prisma.participant.findUniqueOrThrow({ where: { discordUserId: PERSON_B } });
      const csrf = /name="csrf" value="([^"]+)"/.exec(await (await get('/people', moderatorA)).text())![1]!;
      const r = await fetch(`${base}/people/${bob.id}/training`, {
        method: 'POST',
        redirect: 'manual',
        headers: { authorization: `Bearer ${moderatorA}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ action: 'exclude', csrf }).toString(),
      });
      expect(r.status).toBe(404);
      expect(await t.prisma.trainingExclusion.count({ where: { participantId: bob.id } })).toBe(0);
    });
  });
});

describe('the Bradley-Terry table kept between requests', () => {
  const operator = { role: 'operator', guildId: null, actor: 'test', principal: 'test' } as const;
  it('is fitted again when a judgement arrives or goes, and counts the judgements preferenceJudgements reads', async () => {
    const before = await policiesOverview(t.prisma, operator);
    const d0 = await judgementsDigest(t.prisma);
    expect(d0.n).toBe((await preferenceJudgements(t.prisma)).length);
    expect(before.bradleyTerry.judgements).toBe(d0.n);
    expect(before.bradleyTerry.rows.length).toBeGreaterThanOrEqual(2);
    // One more answered choice (one of them again, its sessions the other way round, answered later): the digest
    // and the table's count change.
    const p = await t.prisma.preference.findFirstOrThrow({
      where: { choice: { in: ['a', 'b'] } },
      orderBy: { answeredAt: 'asc' },
    });
    const extra = await t.prisma.preference.create({
      data: {
        raterId: p.raterId,
        sessionAId: p.sessionBId,
        sessionBId: p.sessionAId,
        choice: p.choice,
        answeredAt: new Date(),
      },
    });
    const d1 = await judgementsDigest(t.prisma);
    expect(d1.n).toBe(d0.n + 1);
    expect(d1.digest).not.toBe(d0.digest);
    const more = await policiesOverview(t.prisma, operator);
    expect(more.bradleyTerry.judgements).toBe(d0.n + 1);
    expect(more.bradleyTerry.rows).not.toEqual(before.bradleyTerry.rows);
    // Gone again: the first digest and the first table.
    await t.prisma.preference.delete({ where: { id: extra.id } });
    expect(await judgementsDigest(t.prisma)).toEqual(d0);
    expect((await policiesOverview(t.prisma, operator)).bradleyTerry).toEqual(before.bradleyTerry);
  });
});
