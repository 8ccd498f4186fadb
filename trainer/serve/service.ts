// `sweetloop serve` as one call, for the CLI and for `npm start` in-process alike: listen at once (/health says
// "loading" until a model is in), then serve a named version, or follow the deployed one.
import type { Logger } from '../../tasks/logger.ts';
import type { Database } from '../../prisma/db.ts';
import type { BackendChoice } from '../model/backend.ts';
import { resolveVersion } from '../versions.ts';
import { engineFactory, followDeployed, servingTarget, VersionServer } from './follow.ts';
import type { EngineFactory, EngineKind, Follower } from './follow.ts';
import { startServer } from './server.ts';
import type { RunningServer } from './server.ts';
import { EngineSlot } from './slot.ts';

export interface ServeSettings {
  /** A PolicyVersion name, `starter`, or `deployed` (follow deploys). */
  policy: string;
  port: number;
  host: string;
  engine: EngineKind;
  maxBatch: number;
  maxQueue: number;
  backend?: BackendChoice;
  /** For `starter`: where it is built, and its seed (the trainer's VersionContext). */
  checkpointRoot: string;
  seed: number;
  log: Logger;
  /** Poll interval of the deploy follower (ms). */
  pollMs?: number;
  /** Replace the engine constructor (tests, benchmarks). */
  factory?: EngineFactory;
}

export interface Serving {
  server: RunningServer;
  url: string;
  /** Present with `--policy deployed`. */
  follower: Follower | null;
  /** Resolves once the first model is loaded (rejects if a named version cannot be served). */
  ready: Promise<void>;
  close(): Promise<void>;
}

export async function startServing(db: Database, s: ServeSettings): Promise<Serving> {
  const slot = new EngineSlot();
  const server = await startServer({ engine: slot, port: s.port, host: s.host, log: s.log });
  const factory =
    s.factory ??
    engineFactory({
      kind: s.engine,
      maxBatch: s.maxBatch,
      maxQueue: s.maxQueue,
      log: s.log,
      ...(s.backend ? { backend: s.backend } : {}),
    });
  let follower: Follower | null = null;
  let ready: Promise<void>;
  if (s.policy === 'deployed') {
    follower = await followDeployed({ db, slot, factory, log: s.log, ...(s.pollMs ? { pollMs: s.pollMs } : {}) });
    ready = slot.engine ? Promise.resolve() : waitFor(() => slot.engine !== null);
  } else {
    const versions = new VersionServer({ slot, factory, log: s.log });
    ready = (async () => {
      const v = await resolveVersion(
        { prisma: db.prisma, checkpointRoot: s.checkpointRoot, seed: s.seed, log: (line) => s.log.info(line) },
        s.policy,
      );
      await versions.serve(await servingTarget(db.prisma, v));
    })();
  }
  ready.catch(() => {});
  return {
    server,
    url: server.url,
    follower,
    ready,
    close: async () => {
      await follower?.stop();
      await server.close();
    },
  };
}

function waitFor(cond: () => boolean, everyMs = 200): Promise<void> {
  return new Promise((resolve) => {
    const t = setInterval(() => {
      if (cond()) {
        clearInterval(t);
        resolve();
      }
    }, everyMs);
    t.unref();
  });
}
