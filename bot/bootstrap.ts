// What `sweetloop start` prepares before serving anyone: the schema migrated, tasks to hand out, and a policy
// deployed. Each step is a no-op when already done, so a restart costs seconds.
import { resolve, join } from 'node:path';
import type { Database } from '../prisma/db.ts';
import type { PolicyVersion } from '../prisma/generated/client.ts';
import type { Logger } from '../tasks/logger.ts';
import { STARTER_ALGORITHM, deployedPolicy, registerVersion, servesOnlyStarter } from '../prisma/policy-store.ts';
import { switchDeployedPolicy } from '../prisma/deployment-store.ts';

export async function migrateDatabase(db: Database, log?: Logger): Promise<string[]> {
  const { migrate } = await import('../prisma/migrate.ts');
  const { applied } = await migrate(db, log ? { log } : {});
  // Sessions that ended before Session.activeMs existed get it once here, so pay and the dashboard read a number.
  const { recordActiveTimes } = await import('../prisma/active-time-store.ts');
  const filled = await recordActiveTimes(db.prisma);
  if (filled) log?.info({ sessions: filled }, 'recorded the active time of sessions that ended before it was stored');
  return applied;
}

/** Imports the built-in task library when the database holds no task yet; returns how many were added. */
export async function seedTasksIfEmpty(db: Database, log?: Logger): Promise<number> {
  if ((await db.prisma.task.count()) > 0) return 0;
  const [{ builtinTasks }, { importTasks }] = await Promise.all([
    import('../tasks/library.ts'),
    import('../prisma/task-store.ts'),
  ]);
  const r = await importTasks(db.prisma, builtinTasks());
  log?.info({ inserted: r.inserted }, 'seeded the built-in tasks');
  return r.inserted;
}

export interface PolicySetup {
  /** A Hugging Face model directory to serve instead of the starter (POLICY_MODEL_DIR). */
  policyModelDir?: string | undefined;
  /** Where the starter is built (CHECKPOINT_DIR/starter). */
  checkpointDir: string;
  seed: number;
  log?: Logger;
  progress?: 'bar' | 'lines' | 'none';
}

/**
 * Makes sure a policy is deployed. If one already is, it is kept (a deployment made by a moderator or the
 * trainer wins). Otherwise the configured model directory, or the starter policy (on first run copied from the
 * build the repository ships for the seed, or trained when it ships none), is registered as a PolicyVersion and
 * deployed (audit action 'policy.deploy' by 'bot').
 */
export async function ensureDeployedPolicy(db: Database, setup: PolicySetup): Promise<PolicyVersion> {
  const current = await deployedPolicy(db.prisma);
  if (current) return current;
  let dir: string;
  let sha: string;
  let name: string;
  let algorithm: string;
  if (setup.policyModelDir) {
    dir = resolve(setup.policyModelDir);
    const { checkpointSha256 } = await import('../trainer/model/checkpoint.ts');
    sha = await checkpointSha256(dir);
    name = `initial-${sha.slice(0, 8)}`;
    algorithm = 'external';
  } else {
    dir = resolve(join(setup.checkpointDir, 'starter'));
    const { ensureStarterPolicy, starterVersionName } = await import('../trainer/recipes/starter.ts');
    const r = await ensureStarterPolicy({
      dir,
      seed: setup.seed,
      progress: setup.progress ?? 'none',
      log: (line) => setup.log?.info(line),
    });
    sha = r.sha256;
    name = starterVersionName(sha);
    algorithm = STARTER_ALGORITHM;
  }
  // Deployed through the one deploy path, so running bots and servers hear of it (NOTIFY) as of any other deploy.
  const registered = await registerVersion(db.prisma, {
    name,
    algorithm,
    checkpointPath: dir,
    checkpointSha256: sha,
    ifExists: 'reuse',
  });
  const v = await switchDeployedPolicy(db, 'bot', registered, 'policy.deploy', {
    detail: { reason: 'no policy was deployed', checkpoint: dir },
  });
  setup.log?.info({ policy: name, dir }, 'policy deployed');
  return v;
}

/** Words of the warning when people on Discord would play only the starter (at `start` and in a study's status). */
export const STARTER_ONLY_WARNING =
  'only the built-in starter policy serves people: a small model trained on a CPU for trying Sweetloop, not a policy to study; register and deploy one (docs/serving-and-vllm.md)';

/** At a Discord start: warns (pino) when the deployed version is the starter, so a study does not run on it unnoticed. */
export function warnIfOnlyStarter(deployed: PolicyVersion, log: Logger): void {
  if (servesOnlyStarter([deployed])) log.warn({ policy: deployed.name }, STARTER_ONLY_WARNING);
}

/** The one command that puts a real small model in the agent's seat (first-run notice, README's quick start). */
export const REAL_MODEL_COMMAND =
  'npx sweetloop policy add qwen2.5-0.5b --gguf hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf --deploy';

/**
 * What the console says on a start where the starter is deployed: what it is (with its parameter count, read from
 * its config) and the one command for a real model. Null for any other version.
 */
export async function starterNotice(deployed: PolicyVersion): Promise<string | null> {
  if (!servesOnlyStarter([deployed]) || !deployed.checkpointPath) return null;
  const [{ readConfig }, { parameterShapes }] = await Promise.all([
    import('../trainer/model/checkpoint.ts'),
    import('../trainer/model/decoder.ts'),
  ]);
  let params = 0;
  for (const shape of parameterShapes(await readConfig(deployed.checkpointPath)).values())
    params += shape.reduce((a, b) => a * b, 1);
  return [
    `The agent is the starter policy (${deployed.name}): a smoke test of ${(params / 1e6).toFixed(1)}M parameters trained on a CPU in minutes,`,
    'there to show the loop works end to end, not to collaborate. To put a real small model in its seat (a ~400 MB',
    'download, then served on this CPU by llama.cpp; needs the network once), stop this and run:',
    '',
    `    ${REAL_MODEL_COMMAND}`,
    '',
  ].join('\n');
}

/** A stable id for the console's person: the same OS user resumes the same sessions. */
export function consoleIdentity(username: string): string {
  return `console:${username}`;
}
