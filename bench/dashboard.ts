// npm run bench:dashboard [-- --sessions N] [--requests N] [--pages /studies,/policies,...]
//
// Fills a throwaway Postgres database with N generated sessions (default 100,000: 6 turns each with provenance on
// the agent turns, an evaluation with per-test detail, a rating on every other one, a flag on 1 in 100, critic
// advantages on 1 in 10, over 2,000 people in 3 guilds, 500 tasks and 3 policy versions), then asks the dashboard
// (bot/dashboard/server.ts, in this process through fastify's inject: no network, so the figure is the server's
// own time: routing, the database queries and rendering) for the session list, session pages and the other pages
// (studies, policies, people, runs, simulator; bench/dashboard-seed.ts fills what they read), and prints
// p50/p99 of each. The goal: p99 under 300 ms. The database is dropped afterwards.
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { countArg } from './args.ts';
import { percentile } from '../tasks/stats.ts';
import { seedAround, seedSessions } from './dashboard-seed.ts';

/** The pages besides the session list and a session, each asked for as it is (they take no filter). */
const OTHER_PAGES = ['/studies', '/policies', '/people', '/runs', '/calibration'];

async function main(): Promise<void> {
  const sessions = countArg('sessions', 100_000);
  const requests = countArg('requests', 200);
  const pagesArg = process.argv.includes('--pages')
    ? process.argv[process.argv.indexOf('--pages') + 1]!.split(',')
    : null;
  const { createTestDatabase } = await import('../testing/database.ts');
  const { buildDashboard } = await import('../bot/dashboard/server.ts');
  const t = await createTestDatabase();
  const load0 = loadavg()[0]!;
  try {
    const s0 = performance.now();
    await seedSessions(t.url, sessions);
    await seedAround(t.url, t.prisma);
    console.log(
      `seeded ${sessions.toLocaleString('en')} sessions in ${((performance.now() - s0) / 1000).toFixed(1)} s`,
    );
    // A loopback dashboard admits the bearer of its login secret (an operator), as `sweetloop dashboard` prints it.
    const loginSecret = 'sld_bench-dashboard-login-secret';
    const app = await buildDashboard({
      db: t.db,
      host: '127.0.0.1',
      port: 0,
      salt: 'bench-dashboard-salt',
      chromiumPath: '/usr/bin/chromium',
      loginSecret,
    });
    const ids = (await t.prisma.session.findMany({ select: { id: true }, orderBy: { id: 'asc' } })).map((s) => s.id);
    const policy = (await t.prisma.policyVersion.findFirstOrThrow({ where: { name: 'policy-2' } })).id;
    const listUrls = (i: number) => {
      const variants = [
        `/sessions?page=${1 + (i % 20)}`,
        '/sessions?kind=frontend',
        '/sessions?outcome=success',
        '/sessions?flag=open',
        `/sessions?policy=${policy}`,
        '/sessions?rating=4&from=2026-02-01&to=2026-02-28',
      ];
      return variants[i % variants.length]!;
    };
    const measure = async (name: string, urlOf: (i: number) => string) => {
      for (let i = 0; i < 10; i++)
        await app.inject({
          method: 'GET',
          url: urlOf(i),
          headers: { host: '127.0.0.1', authorization: `Bearer ${loginSecret}` },
        });
      const times: number[] = [];
      for (let i = 0; i < requests; i++) {
        const a = performance.now();
        const r = await app.inject({
          method: 'GET',
          url: urlOf(i),
          headers: { host: '127.0.0.1', authorization: `Bearer ${loginSecret}` },
        });
        times.push(performance.now() - a);
        if (r.statusCode !== 200) throw new Error(`${urlOf(i)}: ${r.statusCode}`);
      }
      const row = {
        page: name,
        requests,
        p50: percentile(times, 50),
        p99: percentile(times, 99),
        max: Math.max(...times),
      };
      console.log(
        `${name.padEnd(14)} p50 ${row.p50.toFixed(1)} ms  p99 ${row.p99.toFixed(1)} ms  max ${row.max.toFixed(1)} ms  (${requests} requests)`,
      );
      return row;
    };
    const rows = [
      await measure('session list', listUrls),
      await measure('session page', (i) => `/sessions/${ids[(i * 7919) % ids.length]}`),
    ];
    for (const page of pagesArg ?? OTHER_PAGES) rows.push(await measure(page, () => page));
    await app.close();
    console.log(JSON.stringify({ sessions, cores: cpus().length, loadBefore: load0, loadAfter: loadavg()[0], rows }));
  } finally {
    await t.drop();
  }
}

await main();
