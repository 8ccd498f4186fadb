// Which policy version answers people, at the database level, for the bot's moderator commands and the
// trainer's deploy/rollback/promotion alike. Exactly one version is `deployed`; deploying another retires the
// current one, and a rollback re-deploys the one deployed before it. Every change is written to the audit log
// and announced with NOTIFY policy_deployed <version id> so running bots switch at once (on PGlite they also poll).
// Deploy and rollback by name are here too, with errors worded for a person (PolicyError): the bot's /mod
// commands, the CLI and the trainer's promotion all call these, so the rules cannot drift apart. Only
// switchDeployedPolicy makes a version deployed (policy-store.ts registers them, always as candidates). A version
// trained on sessions of a person who had their data deleted is deployed (or rolled back to, promoted,
// A/B-tested) only with an operator's explicit force, audited: erasedDataBlocker is that one rule.
import type { Database } from './db.ts';
import type { PolicyVersion, Prisma, PrismaClient } from './generated/client.ts';
import { deployedPolicy, PolicyError, resolvePolicyName, trainedOnErasedData } from './policy-store.ts';

export const POLICY_CHANNEL = 'policy_deployed';

/** The version a rollback would re-deploy: the most recently deployed one that is not deployed now. */
export async function previouslyDeployedPolicy(prisma: PrismaClient): Promise<PolicyVersion | null> {
  const current = await deployedPolicy(prisma);
  return prisma.policyVersion.findFirst({
    where: {
      deployedAt: { not: null },
      status: { notIn: ['deployed', 'removed'] },
      ...(current ? { id: { not: current.id } } : {}),
    },
    orderBy: { deployedAt: 'desc' },
  });
}

/** Who asks to deploy a version trained on erased data anyway. */
export interface ForceOptions {
  /** The explicit override (CLI --force, /mod force:True). */
  force?: boolean;
  /** Whether the one asking is an operator (the CLI's user is: they hold the database). */
  operator?: boolean;
}

/**
 * The one rule for putting a version trained on erased data in front of people (every deploy, rollback and
 * promotion goes through switchDeployedPolicy, which applies it): only with an operator's explicit force. Null
 * when `v` may be deployed; else the reason, for the person who asked.
 */
export function erasedDataBlocker(v: Pick<PolicyVersion, 'name' | 'metrics'>, o: ForceOptions): string | null {
  if (!trainedOnErasedData(v)) return null;
  const why = `"${v.name}" was trained on sessions of a person whose data has since been deleted (privacy delete)`;
  if (!o.force)
    return `${why}: deploying it needs an operator's explicit force (\`--force\` on the command line, \`force: True\` in /mod), which is audited. Better: train a new version without their sessions.`;
  if (!o.operator) return `${why}: only an operator may force it into service.`;
  return null;
}

/** PolicyError when erasedDataBlocker refuses `v`. */
export function assertDeployable(v: Pick<PolicyVersion, 'name' | 'metrics'>, o: ForceOptions): void {
  const blocker = erasedDataBlocker(v, o);
  if (blocker) throw new PolicyError(blocker);
}

export interface SwitchOptions extends ForceOptions {
  /** Extra audit-log detail (gate scores, the version rolled back from). */
  detail?: Record<string, unknown>;
  /**
   * 'required' (default): a failed NOTIFY is thrown, after the switch has committed. 'best-effort': it is
   * ignored — for callers that must report the committed switch whatever happens to the announcement.
   */
  notify?: 'required' | 'best-effort';
  /** The Discord guild the switch was asked from (kept in the audit entry). */
  guildId?: string | null;
  /**
   * Run on the target once the rules allow the switch and before it is made, e.g. loading an adapter version into
   * its server (trainer/policies/lifecycle.ts loadBeforeDeploy); a throw leaves everything as it was.
   */
  prepare?: (target: PolicyVersion) => Promise<unknown>;
}

/**
 * Deploys `target` in one transaction (retiring whatever else is deployed, recording the audit entry `action` by
 * `actor`), then announces it on POLICY_CHANNEL. A version trained on erased data needs an operator's force
 * (erasedDataBlocker, checked on the row as it is inside the transaction); a forced one also gets the audit
 * entry 'policy.force-erased-data'.
 */
export async function switchDeployedPolicy(
  db: Database,
  actor: string,
  target: PolicyVersion,
  action: string,
  opts: SwitchOptions = {},
): Promise<PolicyVersion> {
  if (opts.prepare) {
    assertDeployable(target, opts);
    await opts.prepare(target);
  }
  const deployed = await db.prisma.$transaction(async (tx) => {
    const now = new Date();
    const fresh = await tx.policyVersion.findUniqueOrThrow({ where: { id: target.id } });
    assertDeployable(fresh, opts);
    if (trainedOnErasedData(fresh)) {
      await tx.auditLog.create({
        data: {
          actor,
          action: 'policy.force-erased-data',
          target: fresh.name,
          guildId: opts.guildId ?? null,
          detail: { versionId: fresh.id, via: action },
        },
      });
    }
    const previous = await tx.policyVersion.findMany({
      where: { status: 'deployed', id: { not: target.id } },
      select: { name: true },
    });
    await tx.policyVersion.updateMany({
      where: { status: 'deployed', id: { not: target.id } },
      data: { status: 'retired', retiredAt: now },
    });
    const v = await tx.policyVersion.update({
      where: { id: target.id },
      data: { status: 'deployed', deployedAt: now, retiredAt: null },
    });
    await tx.auditLog.create({
      data: {
        actor,
        action,
        target: v.name,
        guildId: opts.guildId ?? null,
        detail: { versionId: v.id, previous: previous.map((p) => p.name), ...opts.detail } as Prisma.InputJsonObject,
      },
    });
    return v;
  });
  const announced = db.notify(POLICY_CHANNEL, deployed.id);
  if (opts.notify === 'best-effort') await announced.catch(() => {});
  else await announced;
  return deployed;
}

/**
 * Re-deploys the version deployed before the current one (audit action 'policy.rollback', detail `from` the
 * current version's name). Null when there is none; nothing changes then.
 */
export async function rollbackDeployedPolicy(
  db: Database,
  actor: string,
  opts: Pick<SwitchOptions, 'notify' | 'guildId' | 'force' | 'operator' | 'prepare'> = {},
): Promise<PolicyVersion | null> {
  const current = await deployedPolicy(db.prisma);
  const previous = await previouslyDeployedPolicy(db.prisma);
  if (!previous) return null;
  return switchDeployedPolicy(db, actor, previous, 'policy.rollback', {
    ...opts,
    detail: current ? { from: current.name } : {},
  });
}

/** Deploys the version named `name` (audit action 'policy.deploy'); PolicyError when unknown or already deployed. */
export async function deployPolicyByName(
  db: Database,
  actor: string,
  name: string,
  opts: SwitchOptions = {},
): Promise<PolicyVersion> {
  const target = await resolvePolicyName(db.prisma, name);
  if (target.status === 'deployed') throw new PolicyError(`"${target.name}" is already deployed.`);
  if (target.status === 'removed')
    throw new PolicyError(`"${target.name}" was removed (sweetloop policy remove): it cannot be deployed.`);
  return switchDeployedPolicy(db, actor, target, 'policy.deploy', opts);
}

/** Re-deploys the version deployed before the current one; PolicyError when there is none. */
export async function rollbackPolicy(
  db: Database,
  actor: string,
  opts: Pick<SwitchOptions, 'notify' | 'guildId' | 'force' | 'operator' | 'prepare'> = {},
): Promise<PolicyVersion> {
  const v = await rollbackDeployedPolicy(db, actor, opts);
  if (!v) throw new PolicyError('There is no earlier deployed version to roll back to.');
  return v;
}

/**
 * Records a promotion gate's evidence on the candidate (metrics.gate, beside what training stored); a candidate the
 * gate keeps also gets the audit entry 'policy.keep-candidate'. A deployed one is audited by its switch.
 */
export async function recordGateEvidence(
  prisma: PrismaClient,
  actor: string,
  candidate: PolicyVersion,
  gate: Prisma.InputJsonObject,
  decision: 'deployed' | 'kept',
): Promise<void> {
  const metrics = { ...((candidate.metrics as Record<string, unknown> | null) ?? {}), gate };
  await prisma.$transaction(async (tx) => {
    await tx.policyVersion.update({
      where: { id: candidate.id },
      data: { metrics: metrics as Prisma.InputJsonObject },
    });
    if (decision === 'kept')
      await tx.auditLog.create({
        data: { actor, action: 'policy.keep-candidate', target: candidate.name, detail: gate },
      });
  });
}
