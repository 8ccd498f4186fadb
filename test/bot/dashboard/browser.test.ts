// The dashboard in the real Chromium (playwright-core): study → its sessions → a session with each agent turn's
// provenance and the critic's advantages, a frontend session's two screenshots side by side, the policies page's
// leaderboard with intervals, the training runs page (phases with progress, loss curves, the critic against the
// tests, the gate's games linked to their sessions), a moderator who sees one guild, 401 beyond loopback without a token, and a hostile
// message that stays text (no script runs, nothing navigates). A screenshot of every page is written under
// test-output/dashboard/ for a person to look at.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { GUILD_A, HOSTILE, seedDashboardData, type DashboardData } from '../../../testing/dashboard-data.ts';
import { startDashboard } from '../../../bot/dashboard/server.ts';
import { newTokenSecret } from '../../../bot/dashboard/access.ts';
import { createDashboardToken } from '../../../prisma/dashboard-store.ts';
import { DEFAULT_CHROMIUM_PATH } from '../../../tasks/render.ts';

const OUT = fileURLToPath(new URL('../../../test-output/dashboard/', import.meta.url));
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
const chromiumPath = process.env.CHROMIUM_PATH || DEFAULT_CHROMIUM_PATH;

let t: TestDatabase;
let data: DashboardData;
let browser: Browser;
let local: { url: string; loginUrl: string; close: () => Promise<unknown> };
let remote: { url: string; close: () => Promise<unknown> };
let moderator: string;

beforeAll(async () => {
  mkdirSync(OUT, { recursive: true });
  t = await createTestDatabase();
  data = await seedDashboardData(t.db);
  const l = await startDashboard({ db: t.db, host: '127.0.0.1', port: 0, salt: 'browser-test-salt', chromiumPath });
  local = { url: l.url.replace(/\/$/, ''), loginUrl: l.loginUrl!, close: () => l.app.close() };
  const s = newTokenSecret();
  await createDashboardToken(t.prisma, 'test', {
    role: 'moderator',
    guildId: GUILD_A,
    tokenSha256: s.sha256,
    prefix: s.prefix,
  });
  moderator = s.secret;
  const r = await startDashboard({ db: t.db, host: '0.0.0.0', port: 0, salt: 'browser-test-salt', chromiumPath });
  remote = { url: `http://127.0.0.1:${new URL(r.url).port}`, close: () => r.app.close() };
  browser = await chromium.launch({ executablePath: chromiumPath, args: FLAGS });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await local?.close();
  await remote?.close();
  await t?.drop();
});

/** A fresh page; signed in to the loopback dashboard through the login link it made at start, unless told not to. */
async function newPage(signIn = true): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('dialog', (d) => void d.dismiss());
  if (signIn) await page.goto(local.loginUrl);
  return page;
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });

describe('the dashboard in Chromium', () => {
  it('goes from a study to its sessions to a session with provenance and critic advantages, and keeps a hostile message as text', async () => {
    const page = await newPage();
    await page.goto(`${local.url}/studies`);
    await shot(page, 'studies');
    await page.click('.study h2 a:text("pilot")');
    await page.waitForURL(/\/sessions\?study=/);
    await shot(page, 'sessions');
    const navigations: string[] = [];
    await page.click(`a[href="/sessions/${data.sessionA}"]`);
    await page.waitForURL(new RegExp(`/sessions/${data.sessionA}$`));
    page.on('framenavigated', (f) => navigations.push(f.url()));

    const agent = page.locator('.turn.agent').first();
    await expect(agent.locator('.provenance').textContent()).resolves.toMatch(
      /model llama-3\.1-8b-instruct \+ adapter sweet-0001 · endpoint · T=0\.7 top-p=0\.95/,
    );
    await expect(agent.locator('.provenance').textContent()).resolves.toMatch(/tokens 210 in \/ 9 out · 812 ms/);
    await expect(page.locator('.strip span').count()).resolves.toBeGreaterThan(0);
    const advantages = await page.locator('.adv').allTextContents();
    expect(advantages).toEqual(['+0.412', '-0.137', '+0.050']);
    await expect(page.locator('.adv.adv-pos').first().isVisible()).resolves.toBe(true);
    await expect(page.locator('table.tests').textContent()).resolves.toContain("'oops'");

    // The hostile reply is shown as the characters typed: no script element, nothing ran, no link to follow.
    const reply = page.locator('.turn.human pre.content').first();
    expect(await reply.textContent()).toBe(HOSTILE);
    expect(
      await page.evaluate(`document.querySelectorAll('script, main img[src="x"], a[href^="javascript:"]').length`),
    ).toBe(0);
    await reply.click();
    await page
      .getByText('link', { exact: false })
      .first()
      .click()
      .catch(() => {});
    await page.waitForTimeout(300);
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(navigations).toEqual([]);
    expect(page.url()).toBe(`${local.url}/sessions/${data.sessionA}`);
    await shot(page, 'session');
    await page.close();
  });

  it("shows a frontend session's target and answer screenshots side by side", async () => {
    const page = await newPage();
    await page.goto(`${local.url}/sessions/${data.frontendSession}`);
    const images = page.locator('.shots img');
    await expect(images.count()).resolves.toBe(2);
    await page.waitForFunction(
      `[...document.querySelectorAll('.shots img')].every((i) => i.complete && i.naturalWidth > 0)`,
      null,
      { timeout: 60_000 },
    );
    const [a, b] = await Promise.all([images.nth(0).boundingBox(), images.nth(1).boundingBox()]);
    expect(Math.abs(a!.y - b!.y)).toBeLessThan(2);
    expect(b!.x).toBeGreaterThan(a!.x + a!.width);
    await expect(page.locator('.shots').textContent()).resolves.toContain('similarity 0.820');
    await shot(page, 'session-frontend');
    await page.close();
  });

  it('shows the policies page with a leaderboard and a Bradley-Terry fit with intervals, and the other pages', async () => {
    const page = await newPage();
    await page.goto(`${local.url}/policies`);
    const board = page.locator('table.leaderboard[data-kind="backend"]');
    await expect(board.locator('tr').nth(1).textContent()).resolves.toMatch(
      /sweet-0001\s*0\.\d{3} \[0\.\d{3}, 0\.\d{3}\]/,
    );
    await expect(page.locator('table.bradley-terry tr').count()).resolves.toBe(3);
    await shot(page, 'policies');
    for (const p of ['people', 'calibration', 'payouts']) {
      await page.goto(`${local.url}/${p}`);
      await shot(page, p);
    }
    await expect(page.locator('h1').textContent()).resolves.toContain('Payouts');
    await page.close();
  });

  it("shows each training run's phases with progress bars, its loss curves, the critic against the tests and the gate's games, linked to their sessions", async () => {
    const page = await newPage();
    await page.goto(`${local.url}/runs`);
    const sweetRun = page.locator(`.run[data-run="${data.runId}"]`);
    // Phases: all three done, full green bars; the run in progress: rft at 10 of 40, a quarter of its bar.
    await expect(
      sweetRun
        .locator('table.phases tr[data-phase]')
        .evaluateAll((rows) => rows.map((r) => `${r.getAttribute('data-phase')}:${r.getAttribute('data-state')}`)),
    ).resolves.toEqual(['critic:done', 'collect:done', 'actor:done']);
    await expect(sweetRun.locator('tr[data-phase="collect"]').textContent()).resolves.toMatch(/6 \/ 6 states \(100%\)/);
    const running = page.locator('.run', { hasText: 'rft · running' });
    await expect(running.locator('tr[data-phase="rft"]').textContent()).resolves.toMatch(/10 \/ 40 updates \(25%\)/);
    const [bar, fill] = await Promise.all([
      running.locator('.bar').boundingBox(),
      running.locator('.bar .fill').boundingBox(),
    ]);
    expect(fill!.width / bar!.width).toBeCloseTo(0.25, 2);
    // Loss curves: an SVG polyline per phase, in the run's phase order, its points inside the plot.
    await expect(
      sweetRun.locator('figure.curve').evaluateAll((fs) => fs.map((f) => f.getAttribute('data-phase'))),
    ).resolves.toEqual(['critic', 'actor']);
    const points = (await sweetRun.locator('figure.curve[data-phase="critic"] polyline').getAttribute('points'))!.split(
      ' ',
    );
    expect(points).toHaveLength(12);
    expect(points[0]).toBe('0.0,0.0');
    expect(points.at(-1)).toBe('380.0,110.0');
    // The critic against the tests, as the run stored it.
    await expect(sweetRun.locator('table.critic-check td.agreement').textContent()).resolves.toBe('62.5%');
    await expect(sweetRun.locator('table.critic-check').textContent()).resolves.toMatch(/4 \(4 tasks\)/);
    // The gate's games one by one: ten, each task linked to its sessions, each side to the session that played it.
    await expect(sweetRun.locator('.gate-summary').textContent()).resolves.toMatch(
      /kept sweet-0001 · tie vs starter · 10 games of 5 tasks/,
    );
    const games = sweetRun.locator('table.gate-games tr[data-winner]');
    await expect(games.count()).resolves.toBe(10);
    await expect(games.first().textContent()).resolves.toMatch(
      /^1Write a function that adds 0.*0\.700 ✗0\.300 ✗candidate$/s,
    );
    await expect(running.locator('.gate-games').count()).resolves.toBe(0);
    await shot(page, 'runs');
    await games.first().locator('td').nth(2).locator('a').click();
    await page.waitForURL(/\/sessions\/[0-9a-f-]{36}$/);
    await expect(page.locator('h1').textContent()).resolves.toMatch(/simulated collaborator/);
    await expect(page.locator('.card.meta').first().textContent()).resolves.toContain('policy sweet-0001');
    await page.goto(`${local.url}/runs`);
    await sweetRun.locator('table.gate-games tr[data-winner]').first().locator('td').nth(1).locator('a').click();
    await page.waitForURL(/\/sessions\?task=/);
    // Task 0's sessions: four simulated games and the two Discord sessions.
    await expect(page.locator('td a[href^="/sessions/"]').count()).resolves.toBe(6);
    await page.close();
  });

  it('needs a token beyond loopback, and shows a moderator their guild only', async () => {
    const page = await newPage(false);
    const r = await page.goto(`${remote.url}/sessions`);
    expect(r!.status()).toBe(401);
    await shot(page, 'unauthorized');
    const login = await page.goto(`${remote.url}/login?token=${encodeURIComponent(moderator)}`);
    expect(login!.status()).toBe(200);
    expect(new URL(page.url()).search).toBe('');
    await page.goto(`${remote.url}/sessions`);
    const links = await page
      .locator('td a[href^="/sessions/"]')
      .evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    expect(links).toEqual([`/sessions/${data.sessionA}`]);
    await expect(page.locator('header .who').textContent()).resolves.toContain('moderator · one guild');
    await shot(page, 'moderator-sessions');
    expect((await page.goto(`${remote.url}/payouts`))!.status()).toBe(403);
    expect((await page.goto(`${remote.url}/sessions/${data.sessionB}`))!.status()).toBe(404);
    await page.close();
  });
});
