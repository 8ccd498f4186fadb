// The compose files and Dockerfiles hold the structure the deployment relies on. This test reads them; running them
// for real is bin/compose-check.sh (too heavy for the test suite: docs/docker.md has its output).
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
  build?: { context?: string; dockerfile: string; network?: string; secrets?: string[] };
  command?: string[];
  restart?: string;
  cap_drop?: string[];
  security_opt?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  deploy?: {
    resources?: { reservations?: { devices?: { driver: string; count?: number | string; capabilities: string[] }[] } };
  };
}
const compose = parse(readFileSync('docker-compose.yml', 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};
const { postgres, bot, trainer, vllm, dashboard } = compose.services as Record<
  'postgres' | 'bot' | 'trainer' | 'vllm' | 'dashboard',
  Service
>;
const gpu = (parse(readFileSync('docker-compose.gpu.yml', 'utf8')) as { services: { trainer: Service } }).services
  .trainer;
const composeText = readFileSync('docker-compose.yml', 'utf8') + readFileSync('docker-compose.gpu.yml', 'utf8');
const schemaVariables = new Set(Object.keys(configSchema.shape));
const composeOnly = new Map(COMPOSE_VARIABLES.map((v) => [v.variable, v.default]));
/** Every `${VAR}` / `${VAR:-default}` the compose file interpolates (comments included: they are instructions too). */
const interpolated = [...composeText.matchAll(/\$\{([A-Z0-9_]+)(?::?[-?]([^}]*))?\}/g)].map((m) => ({
  variable: m[1]!,
  default: m[2],
}));

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

  it("checks the bot's readiness endpoint and gives SIGTERM longer than the bot's shutdown deadline", () => {
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

  it('comes up on a host without a GPU: the trainer on WebAssembly, the NVIDIA device request only in docker-compose.gpu.yml', () => {
    for (const s of Object.values(compose.services).filter((x) => !x.profiles)) expect(s.deploy).toBeUndefined();
    expect(trainer.environment?.TFJS_BACKEND).toBe('wasm');
    expect(trainer.build?.dockerfile).toBe('Dockerfile.bot');
    const devices = gpu.deploy?.resources?.reservations?.devices ?? [];
    expect(devices).toHaveLength(1);
    expect(devices[0]!.driver).toBe('nvidia');
    expect(devices[0]!.capabilities).toContain('gpu');
    expect(gpu.environment?.TFJS_BACKEND).toBe('tensorflow');
    expect(gpu.build?.dockerfile).toBe('Dockerfile.trainer');
  });

  it('runs the Discord bot, never the console, and gives up restarting a service that keeps failing', () => {
    expect(bot.command).toEqual(['node', 'bin/sweetloop.cjs', 'bot']);
    for (const s of [bot, trainer]) expect(s.restart).toMatch(/^on-failure:\d+$/);
  });

  it('runs the Sweetloop services with no capabilities and no privilege gain, lifting only what the sandboxes need', () => {
    for (const s of [bot, dashboard, trainer]) {
      expect(s.cap_drop).toEqual(['ALL']);
      // User namespaces (bubblewrap, Chromium's sandbox): Docker's default seccomp and AppArmor profiles refuse them.
      expect(s.security_opt).toEqual(['no-new-privileges:true', 'seccomp=unconfined', 'apparmor=unconfined']);
    }
  });

  it('builds the bot, dashboard and CPU trainer from one build, with the build network and CA for unusual hosts', () => {
    for (const s of [bot, dashboard, trainer])
      expect(s.build).toEqual({
        context: '.',
        dockerfile: 'Dockerfile.bot',
        network: '${BUILD_NETWORK:-default}',
        secrets: ['extra_ca'],
      });
    expect(composeText).toContain('file: ${BUILD_CA_CERT:-/dev/null}');
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
    for (const [name, s] of Object.entries({ bot, trainer, gpu })) {
      expect(existsSync(s.build!.dockerfile), name).toBe(true);
      expect(s.command?.slice(0, 2)).toEqual(['node', 'bin/sweetloop.cjs']);
      const [sub, ...args] = s.command!.slice(2);
      const command: Command | undefined = program.commands.find((c) => c.name() === sub);
      expect(command, `${name} runs sweetloop ${sub}`).toBeDefined();
      const flags = command!.options.map((o) => o.long);
      for (const a of args.filter((x) => x.startsWith('--')))
        expect(flags, `${name}: sweetloop ${sub} ${a}`).toContain(a);
    }
    // On the CPU the starter's preset; the GPU trainer a preset meant for a GPU.
    const preset = (s: Service) => s.command![s.command!.indexOf('--preset') + 1]!;
    expect(preset(trainer)).toBe('cpu-small');
    expect(isPresetName(preset(gpu))).toBe(true);
    expect(preset(gpu)).not.toBe('cpu-small');
  });

  it('passes every setting through the env file, and names only variables the schema or COMPOSE_VARIABLES define', () => {
    for (const s of [bot, trainer]) expect(s.env_file).toEqual([{ path: '.env', required: false }]);
    expect(interpolated.length).toBeGreaterThan(0);
    for (const v of interpolated)
      expect(
        schemaVariables.has(v.variable) || composeOnly.has(v.variable),
        `\${${v.variable}} in docker-compose.yml`,
      ).toBe(true);
    for (const [name, s] of Object.entries({ bot, trainer })) {
      for (const key of Object.keys(s.environment ?? {}))
        expect(schemaVariables.has(key), `${name}.environment.${key}`).toBe(true);
    }
    // A default written in the compose file is the one the schema (or COMPOSE_VARIABLES) documents, except
    // where a container path or the containers' log format is the point.
    const containerDefaults: Record<string, string> = { LOG_FORMAT: 'json', PRIVACY_SCAN_DIRS: '/data/exports' };
    for (const v of interpolated.filter((x) => x.default !== undefined)) {
      const documented =
        containerDefaults[v.variable] ??
        composeOnly.get(v.variable) ??
        String((configSchema.shape as Record<string, { parse(x: unknown): unknown }>)[v.variable]!.parse(undefined));
      expect(v.default, `\${${v.variable}:-…}`).toBe(documented);
    }
    // No secret has a default in the compose file: it would be a published value (bin/config-privacy.ts PUBLIC_SECRETS).
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

  it("the bot image has Node 20 and the evaluators' tools, and keeps the optional native binaries tsx and llama.cpp need", () => {
    expect(bot).toMatch(/^FROM node:20-/m);
    expect(bot).not.toMatch(/--omit=optional/);
    expect(bot).toMatch(/@esbuild\/linux-/);
    // The build fails unless node-llama-cpp's prebuilt CPU build for this machine is there.
    expect(bot).toMatch(/keep="linux-\$\(node -p process\.arch\)"[\s\S]*ls -d "node_modules\/@node-llama-cpp\/\$keep"/);
    for (const pkg of ['chromium', 'bubblewrap', 'python3'])
      expect(bot).toMatch(new RegExp(`apt-get install[^\\n]*\\b${pkg}\\b`));
  });

  it("both images run as an unprivileged user and take a host's extra CA for npm as a build secret, not a layer", () => {
    for (const d of [bot, trainer]) {
      const users = [...d.matchAll(/^USER (\S+)$/gm)].map((m) => m[1]);
      expect(users.at(-1)).toBe('sweetloop');
      expect(d).toMatch(/useradd [^\n]*--uid 10001 /);
      expect(d).toMatch(
        /RUN --mount=type=secret,id=extra_ca\s[\s\S]*NODE_EXTRA_CA_CERTS=\/run\/secrets\/extra_ca[\s\S]*npm ci/,
      );
    }
  });

  it('the bot image is a production install without the builds it cannot use', () => {
    expect(bot).toMatch(/npm ci --omit=dev/);
    // node-llama-cpp: only this CPU's build stays (CUDA, Vulkan and other CPUs go); the Prisma CLI (once it has
    // generated the client) and tfjs-node-gpu are pruned with what only they need.
    expect(bot).toMatch(/find node_modules\/@node-llama-cpp -mindepth 1 -maxdepth 1 ! -name "\$keep" -exec rm -rf/);
    expect(bot).toMatch(
      /npm pkg delete dependencies\.prisma 'optionalDependencies\[@tensorflow\/tfjs-node-gpu\]'\s*\\\n && npm prune --omit=dev/,
    );
  });

  it('the trainer image fails its build saying why when tfjs-node-gpu could not download libtensorflow', () => {
    expect(trainer).toMatch(/did not install its native binding/);
    expect(trainer).toMatch(/storage\.googleapis\.com/);
    expect(trainer).toMatch(/exit 1/);
  });

  it('both install with npm ci from the lock file, after copying what postinstall needs', () => {
    for (const d of [bot, trainer]) {
      expect(d).toMatch(/COPY package\.json package-lock\.json/);
      expect(d).toMatch(/COPY bin\/prisma-generate\.mjs/);
      expect(d).toMatch(/COPY prisma\/schema\.prisma/);
      expect(d.indexOf('COPY bin/prisma-generate.mjs')).toBeLessThan(d.indexOf('npm ci'));
      for (const path of ['package.json', 'package-lock.json', 'bin/prisma-generate.mjs', 'prisma/schema.prisma'])
        expect(existsSync(path)).toBe(true);
    }
  });

  it('.dockerignore keeps local data, installed modules, tests, benchmarks, fakes and guides out of the images', () => {
    const ignore = readFileSync('.dockerignore', 'utf8').split('\n');
    // models: the vllm profile's default VLLM_MODEL_DIR (./models/policy), gigabytes of weights no image needs.
    for (const p of ['node_modules', 'data', 'prisma/generated', '.env', 'models', 'test', 'bench', 'testing', 'docs'])
      expect(ignore).toContain(p);
  });
});
