// Docker cannot run on the development machines: this checks the compose file and Dockerfiles for the
// structure the deployment relies on (see docs/architecture.md, "Docker", for what was and was not tried).
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { buildProgram } from '../bin/cli.ts';

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  deploy?: { resources?: { reservations?: { devices?: { driver: string; count?: number | string; capabilities: string[] }[] } } };
}
const compose = parse(readFileSync('docker-compose.yml', 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};
const { postgres, bot, trainer } = compose.services as Record<'postgres' | 'bot' | 'trainer', Service>;

describe('docker-compose.yml', () => {
  it('has postgres with a persistent volume and a pg_isready health check', () => {
    expect(postgres.image).toMatch(/^postgres:\d+/);
    expect(postgres.volumes).toContain('pgdata:/var/lib/postgresql/data');
    expect(postgres.healthcheck?.test.join(' ')).toMatch(/pg_isready/);
    expect(compose.volumes).toHaveProperty('pgdata');
  });

  it('starts bot and trainer only once postgres is healthy, both pointed at it', () => {
    for (const s of [bot, trainer]) {
      expect(s.depends_on?.postgres?.condition).toBe('service_healthy');
      expect(s.environment?.DATABASE_URL).toMatch(/^postgres:\/\/sweetloop:.*@postgres:5432\/sweetloop$/);
    }
  });

  it('checks the bot\'s readiness endpoint and gives SIGTERM longer than the bot\'s shutdown deadline', () => {
    const b = bot as Service & { stop_grace_period?: string };
    const port = b.environment?.HEALTH_PORT;
    expect(port).toMatch(/^\d+$/);
    expect(b.healthcheck?.test.join(' ')).toContain(`127.0.0.1:${port}/health/ready`);
    const grace = Number(/^(\d+)s$/.exec(b.stop_grace_period ?? '')?.[1]);
    expect(grace).toBeGreaterThan(Number(b.environment?.SHUTDOWN_DEADLINE_SECONDS));
    const tport = trainer.environment?.TRAINER_HEALTH_PORT;
    expect(tport).toMatch(/^\d+$/);
    expect(trainer.healthcheck?.test.join(' ')).toContain(`127.0.0.1:${tport}/health/ready`);
  });

  it('reserves an NVIDIA GPU for the trainer through a device request', () => {
    const devices = trainer.deploy?.resources?.reservations?.devices ?? [];
    expect(devices).toHaveLength(1);
    expect(devices[0]!.driver).toBe('nvidia');
    expect(devices[0]!.capabilities).toContain('gpu');
    expect(trainer.environment?.TFJS_BACKEND).toBe('tensorflow');
    expect(bot.deploy).toBeUndefined();
  });

  it('shares one checkpoints volume between bot and trainer, at the CHECKPOINT_DIR both use', () => {
    expect(compose.volumes).toHaveProperty('checkpoints');
    for (const s of [bot, trainer]) {
      expect(s.volumes).toContain('checkpoints:/data/checkpoints');
      expect(s.environment?.CHECKPOINT_DIR).toBe('/data/checkpoints');
    }
  });

  it('builds each service from a Dockerfile that exists, and runs a registered sweetloop command', () => {
    const registered = buildProgram().commands.map((c) => c.name());
    expect(bot.build?.dockerfile).toBe('Dockerfile.bot');
    expect(trainer.build?.dockerfile).toBe('Dockerfile.trainer');
    for (const [name, s] of Object.entries({ bot, trainer })) {
      expect(existsSync(s.build!.dockerfile), name).toBe(true);
      expect(s.command?.slice(0, 2)).toEqual(['node', 'bin/sweetloop.cjs']);
      const sub = s.command![2]!;
      if (name === 'trainer' && !registered.includes(sub)) {
        // The trainer service command belongs to the training issue; until it lands this cannot be checked.
        console.warn(`docker.test: \`sweetloop ${sub}\` is not registered yet; the trainer service cannot start until it is`);
        continue;
      }
      expect(registered, `${name} runs sweetloop ${sub}`).toContain(sub);
    }
  });
});

describe('Dockerfiles', () => {
  const bot = readFileSync('Dockerfile.bot', 'utf8');
  const trainer = readFileSync('Dockerfile.trainer', 'utf8');

  it('the trainer image carries CUDA 11.x and cuDNN 8 user-space libraries and Node 20 for tfjs-node-gpu 4.22', () => {
    expect(trainer).toMatch(/^FROM nvidia\/cuda:11\.\d+\.\d+-cudnn8-(runtime|devel)-/m);
    expect(trainer).toMatch(/^FROM node:20\b/m);
    expect(trainer).toMatch(/COPY --from=node \/usr\/local\/bin\/node/);
    // Optional dependencies must not be omitted there: tfjs-node-gpu is one.
    expect(trainer).not.toMatch(/--omit=optional/);
    expect(trainer).toMatch(/tfjs_binding\.node/);
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { optionalDependencies: Record<string, string> };
    expect(pkg.optionalDependencies['@tensorflow/tfjs-node-gpu']).toBe('4.22.0');
  });

  it('the bot image has Node 20 and the evaluators\' tools', () => {
    expect(bot).toMatch(/^FROM node:20-/m);
    for (const pkg of ['chromium', 'bubblewrap', 'python3']) expect(bot).toMatch(new RegExp(`apt-get install[^\\n]*\\b${pkg}\\b`));
  });

  it('both install with npm ci from the lock file, after copying what postinstall needs', () => {
    for (const d of [bot, trainer]) {
      expect(d).toMatch(/COPY package\.json package-lock\.json/);
      expect(d).toMatch(/COPY bin\/prisma-generate\.mjs/);
      expect(d).toMatch(/COPY prisma\/schema\.prisma/);
      expect(d.indexOf('COPY bin/prisma-generate.mjs')).toBeLessThan(d.indexOf('npm ci'));
      for (const path of ['package.json', 'package-lock.json', 'bin/prisma-generate.mjs', 'prisma/schema.prisma']) expect(existsSync(path)).toBe(true);
    }
  });

  it('.dockerignore keeps local data and installed modules out of the build context', () => {
    const ignore = readFileSync('.dockerignore', 'utf8').split('\n');
    for (const p of ['node_modules', 'data', 'prisma/generated', '.env']) expect(ignore).toContain(p);
  });
});
