// Docker cannot run on the development machines: this checks the compose file and Dockerfiles for the
// structure the deployment relies on (see docs/architecture.md, "Docker", for what was and was not tried).
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { Command } from 'commander';
import { buildProgram } from '../bin/cli.ts';
import { configSchema } from '../bin/config.ts';
import { COMPOSE_VARIABLES } from '../bin/readme-config.ts';
import { isPresetName } from '../trainer/presets.ts';

interface Service {
  image?: string;
  profiles?: string[];
  env_file?: { path: string; required?: boolean }[];
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
const { postgres, bot, trainer, vllm } = compose.services as Record<'postgres' | 'bot' | 'trainer' | 'vllm', Service>;
const composeText = readFileSync('docker-compose.yml', 'utf8');
const schemaVariables = new Set(Object.keys(configSchema.shape));
const composeOnly = new Map(COMPOSE_VARIABLES.map((v) => [v.variable, v.default]));
/** Every `${VAR}` / `${VAR:-default}` the compose file interpolates (comments included: they are instructions too). */
const interpolated = [...composeText.matchAll(/\$\{([A-Z0-9_]+)(?::?[-?]([^}]*))?\}/g)].map((m) => ({ variable: m[1]!, default: m[2] }));

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

  it('builds each service from a Dockerfile that exists, and runs sweetloop commands and options commander knows', () => {
    const program = buildProgram();
    expect(bot.build?.dockerfile).toBe('Dockerfile.bot');
    expect(trainer.build?.dockerfile).toBe('Dockerfile.trainer');
    for (const [name, s] of Object.entries({ bot, trainer })) {
      expect(existsSync(s.build!.dockerfile), name).toBe(true);
      expect(s.command?.slice(0, 2)).toEqual(['node', 'bin/sweetloop.cjs']);
      const [sub, ...args] = s.command!.slice(2);
      const command: Command | undefined = program.commands.find((c) => c.name() === sub);
      expect(command, `${name} runs sweetloop ${sub}`).toBeDefined();
      const flags = command!.options.map((o) => o.long);
      for (const a of args.filter((x) => x.startsWith('--'))) expect(flags, `${name}: sweetloop ${sub} ${a}`).toContain(a);
    }
    // The trainer image has a GPU: a preset meant for one, not the starter's CPU preset.
    const preset = trainer.command![trainer.command!.indexOf('--preset') + 1]!;
    expect(isPresetName(preset)).toBe(true);
    expect(preset).not.toBe('cpu-small');
  });

  it('passes every setting through the env file, and names only variables the schema or COMPOSE_VARIABLES define', () => {
    for (const s of [bot, trainer]) expect(s.env_file).toEqual([{ path: '.env', required: false }]);
    expect(interpolated.length).toBeGreaterThan(0);
    for (const v of interpolated) expect(schemaVariables.has(v.variable) || composeOnly.has(v.variable), `\${${v.variable}} in docker-compose.yml`).toBe(true);
    for (const [name, s] of Object.entries({ bot, trainer })) {
      for (const key of Object.keys(s.environment ?? {})) expect(schemaVariables.has(key), `${name}.environment.${key}`).toBe(true);
    }
    // A default written in the compose file is the one the schema (or COMPOSE_VARIABLES) documents, except
    // where a container path or the containers' log format is the point.
    const containerDefaults: Record<string, string> = { LOG_FORMAT: 'json', PRIVACY_SCAN_DIRS: '/data/exports' };
    for (const v of interpolated.filter((x) => x.default !== undefined)) {
      const documented = containerDefaults[v.variable] ?? composeOnly.get(v.variable) ?? String((configSchema.shape as Record<string, { parse(x: unknown): unknown }>)[v.variable]!.parse(undefined));
      expect(v.default, `\${${v.variable}:-…}`).toBe(documented);
    }
    // No secret has a default in the compose file: it would be a published value (bin/config.ts PUBLIC_SECRETS).
    for (const secret of ['EXPORT_SALT', 'PRIVACY_KEY']) {
      expect(interpolated.map((v) => v.variable)).not.toContain(secret);
      for (const s of Object.values(compose.services)) expect(s.environment ?? {}).not.toHaveProperty(secret);
    }
  });

  it('runs the pinned vLLM OpenAI server under the vllm profile, with runtime LoRA loading and a health check', () => {
    expect(vllm.profiles).toEqual(['vllm']);
    for (const s of [postgres, bot, trainer]) expect(s.profiles).toBeUndefined();
    expect(vllm.image).toMatch(/^vllm\/vllm-openai:v\d+\.\d+\.\d+$/);
    const args = vllm.command!;
    const value = (flag: string) => args[args.indexOf(flag) + 1];
    expect(args).toContain('--enable-lora');
    expect(value('--max-lora-rank')).toBe('${VLLM_MAX_LORA_RANK:-16}');
    expect(value('--model')).toBe('/models/policy');
    expect(vllm.volumes).toContain('${VLLM_MODEL_DIR:-./models/policy}:/models/policy:ro');
    expect(vllm.environment?.VLLM_ALLOW_RUNTIME_LORA_UPDATING).toBe('True');
    expect(vllm.healthcheck?.test.join(' ')).toContain(`127.0.0.1:${value('--port')}/health`);
    expect(vllm.deploy?.resources?.reservations?.devices?.[0]?.capabilities).toContain('gpu');
  });

  it('mounts one adapters volume at ADAPTERS_DIR in bot, trainer and vllm, and keeps exports on a volume', () => {
    expect(compose.volumes).toHaveProperty('adapters');
    expect(compose.volumes).toHaveProperty('exports');
    const dir = bot.environment?.ADAPTERS_DIR;
    expect(dir).toMatch(/^\/data\//);
    expect(trainer.environment?.ADAPTERS_DIR).toBe(dir);
    for (const s of [bot, trainer]) expect(s.volumes).toContain(`adapters:${dir}`);
    expect(vllm.volumes).toContain(`adapters:${dir}:ro`);
    // Adapters a training run publishes under its checkpoint directory are readable by vLLM at the same path.
    expect(vllm.volumes).toContain(`checkpoints:${trainer.environment?.CHECKPOINT_DIR}:ro`);
    expect(bot.volumes).toContain(`exports:${bot.environment?.EXPORT_DIR}`);
    expect(bot.environment?.PRIVACY_SCAN_DIRS).toContain(bot.environment?.EXPORT_DIR);
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

  it('the bot image has Node 20 and the evaluators\' tools, and keeps the optional native binaries tsx and llama.cpp need', () => {
    expect(bot).toMatch(/^FROM node:20-/m);
    expect(bot).not.toMatch(/--omit=optional/);
    expect(bot).toMatch(/@esbuild\/linux-/);
    expect(bot).toMatch(/@node-llama-cpp\/linux-/);
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
    // models: the vllm profile's default VLLM_MODEL_DIR (./models/policy), gigabytes of weights no image needs.
    for (const p of ['node_modules', 'data', 'prisma/generated', '.env', 'models']) expect(ignore).toContain(p);
  });
});
