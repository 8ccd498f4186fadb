// `sweetloop env serve`: Sweetloop's ColBench environment over HTTP, for RL runs elsewhere (verl, TRL, any
// Python): list the stored tasks, play an episode one agent message a step against the simulated collaborator
// (trainer/env-episodes.ts), or score an answer directly with the sandboxed scorer. Responses carry the task's
// description, the collaborator's replies and the scores; never the hidden reference.
// Access: bound to loopback without a token, a request must name this machine in its Host header (a page elsewhere
// reaching in through DNS rebinding does not); with a token, every request but /health carries it as a bearer;
// beyond loopback the server refuses to listen without one (docs/env-service.md).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { z } from 'zod';
import type { PrismaClient } from '../prisma/generated/client.ts';
import { taskContent } from '../prisma/task-store.ts';
import type { Logger } from '../tasks/logger.ts';
import { isLoopbackHost, loopbackHostHeader } from '../tasks/loopback.ts';
import type { EvaluationOutcome } from '../tasks/scorer.ts';
import { EnvEpisodes, EnvError, type EnvEpisodesOptions } from './env-episodes.ts';

export interface EnvServerOptions extends EnvEpisodesOptions {
  prisma: PrismaClient;
  host: string;
  /** 0: any free port. */
  port: number;
  /** The bearer every request needs; required beyond loopback. */
  token?: string | undefined;
  log?: Logger;
}

export interface EnvServer {
  /** http://host:port, without a trailing slash. */
  url: string;
  port: number;
  episodes: EnvEpisodes;
  close(): Promise<void>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const taskId = z.string().regex(UUID, 'expected a task id (a UUID, from GET /v1/tasks)');
const StartBody = z
  .object({ task_id: taskId, collaborator: z.string().optional(), max_turns: z.number().int().optional() })
  .strict();
const StepBody = z.object({ message: z.string() }).strict();
const ScoreBody = z.object({ task_id: taskId, answer: z.string().max(64_000) }).strict();
const TaskQuery = z
  .object({
    kind: z.enum(['backend', 'frontend']).optional(),
    split: z.enum(['train', 'test']).optional(),
    limit: z.coerce.number().int().min(1).max(10_000).default(1000),
    offset: z.coerce.number().int().min(0).default(0),
  })
  .strict();

function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const r = schema.safeParse(value ?? {});
  if (r.success) return r.data;
  throw new EnvError(400, r.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '));
}

/** An evaluation as the wire carries it (the Evaluation row's fields, snake case). */
export function evaluationBody(e: EvaluationOutcome): Record<string, unknown> {
  return {
    score: e.score,
    success: e.success,
    tests_passed: e.testsPassed ?? null,
    tests_total: e.testsTotal ?? null,
    metric: e.metric ?? null,
    evaluator_version: e.evaluatorVersion,
    detail: e.detail,
  };
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Refuses beyond loopback without a token, then listens. */
export async function startEnvServer(o: EnvServerOptions): Promise<EnvServer> {
  const loopback = isLoopbackHost(o.host);
  if (!loopback && !o.token) {
    throw new Error(
      `refusing to listen on ${o.host}: beyond loopback every request needs a token, and none is set (ENV_SERVE_TOKEN; make one with \`openssl rand -hex 32\`)`,
    );
  }
  const expected = o.token ? digest(o.token) : null;
  const episodes = new EnvEpisodes(o);
  const app: FastifyInstance = Fastify({ logger: false, bodyLimit: 1024 * 1024, forceCloseConnections: true });

  const fail = (reply: FastifyReply, status: number, message: string, retryAfter?: number) => {
    if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter));
    return reply.code(status).send({ error: message });
  };

  app.addHook('onRequest', async (req, reply) => {
    if (loopback && !expected && !loopbackHostHeader(req.headers.host))
      return fail(reply, 403, 'this service answers to localhost only');
    if (!expected || req.url === '/health') return;
    const auth = req.headers.authorization;
    const bearer = typeof auth === 'string' && /^Bearer\s+\S+$/i.test(auth) ? auth.split(/\s+/)[1]! : null;
    if (!bearer || !timingSafeEqual(digest(bearer), expected)) {
      reply.header('www-authenticate', 'Bearer');
      return fail(reply, 401, 'missing or wrong token: send Authorization: Bearer <ENV_SERVE_TOKEN>');
    }
  });

  app.setErrorHandler((err: Error & { statusCode?: number }, _req, reply) => {
    if (err instanceof EnvError) return fail(reply, err.status, err.message, err.retryAfter);
    // fastify's own (a body that is no JSON, or too large): its status and message.
    if (err.statusCode && err.statusCode < 500) return fail(reply, err.statusCode, err.message);
    o.log?.error({ err: err.message }, 'env serve: request failed');
    return fail(reply, 500, err.message);
  });

  const findTask = async (id: string) => {
    const row = await o.prisma.task.findUnique({ where: { id } });
    if (!row) throw new EnvError(404, `no task ${id}`);
    return { row, content: taskContent(row) };
  };

  app.get('/health', async () => ({ ok: true, episodes: episodes.open, scoring: episodes.scoringLoad }));

  app.get('/v1/tasks', async (req) => {
    const q = parse(TaskQuery, req.query);
    const where = { ...(q.kind ? { kind: q.kind } : {}), ...(q.split ? { split: q.split } : {}) };
    const [total, rows] = await Promise.all([
      o.prisma.task.count({ where }),
      o.prisma.task.findMany({
        where,
        orderBy: { contentHash: 'asc' },
        skip: q.offset,
        take: q.limit,
        select: {
          id: true,
          kind: true,
          split: true,
          source: true,
          externalId: true,
          description: true,
          testCases: true,
        },
      }),
    ]);
    return {
      total,
      tasks: rows.map((t) => ({
        id: t.id,
        kind: t.kind,
        split: t.split,
        source: t.source,
        external_id: t.externalId,
        description: t.description,
        // How many tests score it; the calls themselves are the evaluator's.
        tests: Array.isArray(t.testCases) ? t.testCases.length : null,
      })),
    };
  });

  app.post('/v1/episodes', async (req, reply) => {
    const b = parse(StartBody, req.body);
    const { content } = await findTask(b.task_id);
    const started = episodes.start(b.task_id, content, { collaborator: b.collaborator, maxTurns: b.max_turns });
    return reply.code(201).send({
      episode_id: started.episodeId,
      task_id: started.taskId,
      kind: started.kind,
      collaborator: started.collaborator,
      max_turns: started.maxTurns,
      messages: started.messages,
    });
  });

  app.post<{ Params: { id: string } }>('/v1/episodes/:id/step', async (req) => {
    const b = parse(StepBody, req.body);
    const r = await episodes.step(req.params.id, b.message);
    if (!r.done) return { done: false, turn: r.turn, reply: r.reply, messages: r.messages };
    return { done: true, turn: r.turn, answer: r.answer, end_reason: r.endReason, ...evaluationBody(r.evaluation) };
  });

  app.delete<{ Params: { id: string } }>('/v1/episodes/:id', async (req, reply) => {
    if (!episodes.close(req.params.id)) throw new EnvError(404, `no open episode ${req.params.id}`);
    return reply.code(204).send();
  });

  app.post('/v1/score', async (req) => {
    const b = parse(ScoreBody, req.body);
    const { content } = await findTask(b.task_id);
    return evaluationBody(await episodes.score(content, b.answer));
  });

  await app.listen({ host: o.host, port: o.port });
  const addr = app.server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    port: addr.port,
    episodes,
    async close() {
      await episodes.closeAll();
      await app.close();
    },
  };
}
