// The dashboard: a read-mostly web app over the database, server-rendered with Eta templates
// (bot/dashboard/views/, escaped by default) on fastify. Access (bot/dashboard/access.ts): every request needs a
// secret; bound to loopback the server makes its own at start (startDashboard returns the login link to print
// once), bound anywhere else a stored token, and the server refuses to listen there while no live token exists. The one write, a person's exclusion from training, is a POST with a
// CSRF token and an audit row. A Content-Security-Policy without scripts backs up the escaping.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { Eta } from 'eta';
import type { Logger } from '../../tasks/logger.ts';
import type { Database } from '../../prisma/db.ts';
import { liveDashboardTokenCount, auditDashboardAction } from '../../prisma/dashboard-store.ts';
import { excludeFromTraining, includeInTraining, QualityError } from '../../prisma/quality-store.ts';
import type { Renderer } from '../../tasks/render.ts';
import {
  Csrf,
  isLoginSecret,
  isLoopbackHost,
  LOOPBACK_VIEWER,
  loopbackHostHeader,
  newTokenSecret,
  presentedSecret,
  TOKEN_COOKIE,
  viewerOf,
  type Viewer,
} from './access.ts';
import * as format from './format.ts';
import { formatDifference, formatValue } from '../../tasks/calibration.ts';
import { calibrationSvg } from '../report/calibration-report.ts';
import { FilterError, frontendPages, listSessions, OUTCOMES, parseFilter, sessionDetail } from './sessions.ts';
import { curvePoints, runsOverview, RUNS_SHOWN } from './runs.ts';
import { actOnFlag, openFlags } from './flags.ts';
import {
  allPayouts,
  calibrationById,
  calibrationsOverview,
  peopleOverview,
  personInScope,
  policiesOverview,
  studiesOverview,
  visibleStudies,
} from './overview.ts';

const STALE_FORM =
  'The form is stale or came from another site (CSRF token missing or wrong): reload the page and try again.';

export interface DashboardOptions {
  db: Database;
  host: string;
  port: number;
  /** Salt of the pseudonyms people are shown by (EXPORT_SALT: the same pseudonyms as exports). */
  salt: string;
  /** Chromium for the frontend screenshots (tasks/render.ts); started on the first screenshot asked for. */
  chromiumPath: string;
  log?: Logger;
  /**
   * Loopback only: the secret that makes its bearer an operator (startDashboard makes one and returns the login
   * link). Without it a loopback server, like any other, admits stored tokens only.
   */
  loginSecret?: string;
}

export class DashboardRefused extends Error {}

declare module 'fastify' {
  interface FastifyRequest {
    viewer: Viewer;
  }
}

const VIEWS = join(dirname(fileURLToPath(import.meta.url)), 'views');
const CSP =
  "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Builds the app (not listening). Tests and the benchmark inject requests into it or listen on a port. */
export async function buildDashboard(o: DashboardOptions): Promise<FastifyInstance> {
  const prisma = o.db.prisma;
  const loopback = isLoopbackHost(o.host);
  const eta = new Eta({ views: VIEWS, cache: true, autoEscape: true });
  const csrf = new Csrf();
  const app = Fastify({ logger: false, bodyLimit: 16 * 1024 });
  let renderer: Promise<Renderer> | null = null;
  const screenshots = new Map<string, Buffer>();

  app.decorateRequest('viewer', null as unknown as Viewer);
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });

  const page = (reply: FastifyReply, req: FastifyRequest, view: string, data: Record<string, unknown>, status = 200) =>
    reply
      .code(status)
      .type('text/html; charset=utf-8')
      .send(
        eta.render(view, {
          ...data,
          viewer: req.viewer,
          csrf: req.viewer ? csrf.tokenFor(req.viewer) : '',
          f: format,
          path: req.url.split('?')[0],
        }),
      );

  app.addHook('onRequest', async (req, reply) => {
    reply
      .header('Content-Security-Policy', CSP)
      .header('X-Content-Type-Options', 'nosniff')
      .header('Referrer-Policy', 'no-referrer')
      .header('Cache-Control', 'no-store');
    // Bound to loopback, a request naming another host is a page elsewhere reaching in through DNS rebinding.
    if (loopback && !loopbackHostHeader(req.headers.host))
      return reply.code(403).type('text/plain').send('Forbidden: this dashboard answers to localhost only.');
    const url = new URL(req.url, 'http://x');
    const fromLink = url.pathname === '/login' ? url.searchParams.get('token') : null;
    const secret = fromLink ?? presentedSecret(req.headers);
    const viewer = !secret
      ? null
      : loopback && o.loginSecret && isLoginSecret(secret, o.loginSecret)
        ? LOOPBACK_VIEWER
        : await viewerOf(prisma, secret);
    if (viewer) req.viewer = viewer;
    else
      return reply
        .code(401)
        .type('text/html; charset=utf-8')
        .header('WWW-Authenticate', 'Bearer')
        .send(eta.render('unauthorized', { f: format, loopback }));
    if (fromLink) {
      // The token moves from the link into a cookie, and off the address bar and history.
      return reply
        .header('Set-Cookie', `${TOKEN_COOKIE}=${encodeURIComponent(fromLink)}; HttpOnly; SameSite=Strict; Path=/`)
        .redirect('/', 303);
    }
  });

  app.get('/', async (_req, reply) => reply.redirect('/studies', 302));
  app.get('/login', async (_req, reply) => reply.redirect('/', 303));

  app.get('/studies', async (req, reply) =>
    page(reply, req, 'studies', { title: 'Studies', studies: await studiesOverview(prisma, req.viewer) }),
  );

  app.get('/sessions', async (req, reply) => {
    const q = req.query as Record<string, string>;
    let filter;
    try {
      filter = parseFilter(q);
    } catch (err) {
      if (err instanceof FilterError)
        return page(reply, req, 'error', { title: 'Bad filter', message: err.message }, 400);
      throw err;
    }
    const [list, studies, policies] = await Promise.all([
      listSessions(prisma, req.viewer, filter, o.salt),
      visibleStudies(prisma, req.viewer),
      prisma.policyVersion.findMany({ select: { id: true, name: true }, orderBy: { createdAt: 'asc' } }),
    ]);
    const base = Object.fromEntries(
      Object.entries(filter)
        .filter(([k]) => k !== 'page')
        .map(([k, v]) => [k, String(v)]),
    );
    return page(reply, req, 'sessions', {
      title: 'Sessions',
      list,
      filter,
      base,
      studies,
      policies,
      outcomes: OUTCOMES,
    });
  });

  app.get('/sessions/:id', async (req, reply) => {
    const s = await sessionDetail(prisma, req.viewer, (req.params as { id: string }).id, o.salt);
    if (!s)
      return page(reply, req, 'error', { title: 'Not found', message: 'No such session (or not in your guild).' }, 404);
    return page(reply, req, 'session', { title: `Session ${format.shortId(s.id)}`, s });
  });

  app.get('/sessions/:id/screenshot/:which', async (req, reply) => {
    const { id, which } = req.params as { id: string; which: string };
    if (which !== 'target' && which !== 'answer') return reply.code(404).send();
    const pages = await frontendPages(prisma, req.viewer, id);
    const html = which === 'target' ? pages?.reference : pages?.answer;
    if (!pages || html === null || html === undefined)
      return reply.code(404).type('text/plain').send('No such screenshot.');
    const key = `${id}:${which}`;
    let png = screenshots.get(key);
    if (!png) {
      renderer ??= import('../../tasks/render.ts').then(({ Renderer }) =>
        Renderer.launch({ executablePath: o.chromiumPath }),
      );
      png = (await (await renderer).render(html)).png;
      if (screenshots.size > 200) screenshots.delete(screenshots.keys().next().value!);
      screenshots.set(key, png);
    }
    return reply.type('image/png').send(png);
  });

  app.get('/policies', async (req, reply) =>
    page(reply, req, 'policies', { title: 'Policies', p: await policiesOverview(prisma, req.viewer) }),
  );

  app.get('/runs', async (req, reply) =>
    page(reply, req, 'runs', {
      title: 'Training runs',
      runs: await runsOverview(prisma),
      curvePoints,
      shown: RUNS_SHOWN,
    }),
  );

  app.get('/calibration', async (req, reply) =>
    page(reply, req, 'calibration', {
      title: 'Simulator against people',
      calibrations: await calibrationsOverview(prisma, req.viewer),
      formatValue,
      formatDifference,
    }),
  );

  app.get('/calibration/:id/figure.svg', async (req, reply) => {
    const r = await calibrationById(prisma, req.viewer, (req.params as { id: string }).id);
    if (!r) return reply.code(404).type('text/plain').send('No such calibration.');
    // Loaded as an image (never inline), so even a study name that slipped past its escaping could run nothing.
    return reply.type('image/svg+xml').send(calibrationSvg(r));
  });

  app.get('/people', async (req, reply) =>
    page(reply, req, 'people', {
      title: 'People',
      people: await peopleOverview(prisma, req.viewer, o.salt),
      notice: (req.query as { done?: string }).done ?? null,
    }),
  );

  app.post('/people/:id/training', async (req, reply) => {
    const body = (req.body ?? {}) as Record<string, string>;
    if (!csrf.check(req.viewer, body.csrf))
      return page(reply, req, 'error', { title: 'Refused', message: STALE_FORM }, 403);
    const id = (req.params as { id: string }).id;
    const person = /^[0-9a-f-]{36}$/i.test(id) ? await personInScope(prisma, req.viewer, id) : null;
    if (!person)
      return page(reply, req, 'error', { title: 'Not found', message: 'No such person (or not in your guild).' }, 404);
    if (body.action !== 'exclude' && body.action !== 'include')
      return page(reply, req, 'error', { title: 'Bad request', message: 'action: exclude or include.' }, 400);
    const reason = (body.reason ?? '').trim().slice(0, 500) || null;
    try {
      const changed =
        body.action === 'exclude'
          ? await excludeFromTraining(prisma, req.viewer.actor, person.discordUserId, reason)
          : await includeInTraining(prisma, req.viewer.actor, person.discordUserId);
      await auditDashboardAction(
        prisma,
        { id: req.viewer.actor, guildId: req.viewer.guildId },
        `dashboard.training.${body.action}`,
        id,
        { changed, reason },
      );
    } catch (err) {
      if (err instanceof QualityError)
        return page(reply, req, 'error', { title: 'Refused', message: err.message }, 409);
      throw err;
    }
    return reply.redirect(`/people?done=${body.action}`, 303);
  });

  app.get('/flags', async (req, reply) =>
    page(reply, req, 'flags', {
      title: 'Flags',
      flags: await openFlags(prisma, req.viewer, o.salt),
      notice: (req.query as { done?: string }).done ?? null,
    }),
  );

  app.post('/flags/:id', async (req, reply) => {
    const body = (req.body ?? {}) as Record<string, string>;
    if (!csrf.check(req.viewer, body.csrf))
      return page(reply, req, 'error', { title: 'Refused', message: STALE_FORM }, 403);
    if (body.action !== 'confirm' && body.action !== 'clear')
      return page(reply, req, 'error', { title: 'Bad request', message: 'action: confirm or clear.' }, 400);
    const id = (req.params as { id: string }).id;
    const done =
      /^[0-9a-f-]{36}$/i.test(id) &&
      (await actOnFlag(prisma, req.viewer, id, body.action, (body.note ?? '').trim().slice(0, 500) || null));
    if (!done)
      return page(
        reply,
        req,
        'error',
        { title: 'Not found', message: 'No such open flag (or not in your guild).' },
        404,
      );
    return reply.redirect(`/flags?done=${body.action}`, 303);
  });

  app.get('/payouts', async (req, reply) => {
    if (req.viewer.role !== 'operator')
      return page(
        reply,
        req,
        'error',
        { title: 'Operators only', message: 'Payouts name people by their platform id: only operators see them.' },
        403,
      );
    return page(reply, req, 'payouts', { title: 'Payouts', studies: await allPayouts(prisma) });
  });

  app.setNotFoundHandler((req, reply) =>
    page(reply, req, 'error', { title: 'Not found', message: 'No such page.' }, 404),
  );
  app.setErrorHandler((err, req, reply) => {
    // The path alone: a query string may carry a token (/login?token=...).
    o.log?.error({ err: (err as Error).message, path: req.url.split('?')[0] }, 'dashboard request failed');
    return page(
      reply,
      req,
      'error',
      { title: 'Error', message: 'Something went wrong reading this page; the log has the details.' },
      500,
    );
  });
  app.addHook('onClose', async () => {
    if (renderer) await (await renderer).close().catch(() => {});
  });
  return app;
}

/**
 * Builds and listens; refuses beyond loopback while no live token exists. Returns the app, its address and, on
 * loopback, the login link carrying the secret made for this process: print it once, never log it.
 */
export async function startDashboard(
  o: DashboardOptions,
): Promise<{ app: FastifyInstance; url: string; loginUrl: string | null }> {
  if (!isLoopbackHost(o.host) && (await liveDashboardTokenCount(o.db.prisma)) === 0) {
    throw new DashboardRefused(
      `refusing to listen on ${o.host}: beyond loopback every request needs a token, and none exists. ` +
        'Create one with `sweetloop dashboard token create --role operator` (or --role moderator --guild ID), or listen on 127.0.0.1.',
    );
  }
  const loginSecret = isLoopbackHost(o.host) ? (o.loginSecret ?? newTokenSecret().secret) : undefined;
  const app = await buildDashboard({ ...o, ...(loginSecret ? { loginSecret } : {}) });
  await app.listen({ host: o.host, port: o.port });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : o.port;
  const shown = o.host.includes(':') ? `[${o.host}]` : o.host;
  const url = `http://${shown}:${port}/`;
  return { app, url, loginUrl: loginSecret ? `${url}login?token=${encodeURIComponent(loginSecret)}` : null };
}
