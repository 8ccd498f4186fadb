// Studies as operators describe them: turning a command's words (task ids or external ids, a kind and a sample, a
// policy or arms by version name, amounts of money, dates) into the study prisma/study-store.ts stores (its
// progress is bot/study-progress.ts, its payouts bot/study-payouts.ts). Every refusal is a StudyError whose
// message names what to fix; nothing is stored before all is resolved.
import type { PrismaClient, TaskKind, TaskSplit } from '../prisma/generated/client.ts';
import { deployedPolicy, PolicyError, resolvePolicyName } from '../prisma/policy-store.ts';
import { StudyError, type NewStudy } from '../prisma/study-store.ts';
import { Rng } from '../tasks/random.ts';

export interface StudySpec {
  name: string;
  /** Task ids (or the tasks' external ids), e.g. the lines of a file; with `sample`, drawn from. */
  taskIds?: readonly string[];
  kind?: TaskKind;
  /** Draw this many tasks (seeded) from the pool otherwise given. */
  sample?: number;
  seed: number;
  perTask: number;
  split: TaskSplit;
  /** One policy version by name (default: the deployed one), or arms "VERSION:SHARE". */
  policy?: string;
  arms?: readonly string[];
  consentText?: string | null;
  /** Amounts as written ("2.50"), in `currency`. */
  payPerSession?: string;
  bonusSuccess?: string;
  currency?: string;
  maxSessionsPerPerson?: number;
  opens?: string;
  closes?: string;
  guildIds?: readonly string[];
  channelIds?: readonly string[];
  /** The recruiting platform whose participant id people give before their first session ("prolific"). */
  participantId?: string;
  /** Shown to a person after their last session (the platform's completion code). */
  completionCode?: string;
}

/** "2.50" → 250 (minor units); at most two decimals, never negative. */
export function parseAmount(flag: string, text: string): number {
  if (!/^\d+(\.\d{1,2})?$/.test(text.trim()))
    throw new StudyError(`${flag} is an amount such as 2.50 (at most two decimals, not negative), got "${text}".`);
  const [whole, frac = ''] = text.trim().split('.');
  return Number(whole) * 100 + Number(frac.padEnd(2, '0'));
}

export function formatAmount(cents: number, currency: string | null): string {
  return `${(cents / 100).toFixed(2)}${currency ? ` ${currency}` : ''}`;
}

function parseDate(flag: string, text: string | undefined): Date | null {
  if (text === undefined) return null;
  const d = new Date(text);
  if (!text.trim() || Number.isNaN(d.getTime()))
    throw new StudyError(`${flag} is a date such as 2027-01-31 or 2027-01-31T18:00Z, got "${text}".`);
  return d;
}

/** Lines of a task-id file: one id a line; blank lines and lines starting with # are left out. */
export function taskIdLines(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

async function resolvePool(prisma: PrismaClient, spec: StudySpec): Promise<string[]> {
  let ids: string[];
  if (spec.taskIds) {
    const wanted = [...spec.taskIds];
    const uuids = wanted.filter((id) => UUID.test(id));
    const rows = await prisma.task.findMany({
      where: { OR: [{ id: { in: uuids } }, { externalId: { in: wanted } }] },
      select: { id: true, externalId: true },
    });
    const byId = new Map<string, string>();
    for (const r of rows) {
      byId.set(r.id, r.id);
      if (r.externalId) byId.set(r.externalId, r.id);
    }
    const unknown = wanted.filter((id) => !byId.has(id));
    if (unknown.length)
      throw new StudyError(
        `Unknown task id(s): ${unknown.slice(0, 5).join(', ')}${unknown.length > 5 ? ` and ${unknown.length - 5} more` : ''}.`,
      );
    ids = [...new Set(wanted.map((id) => byId.get(id)!))];
  } else if (spec.kind || spec.sample !== undefined) {
    const rows = await prisma.task.findMany({
      where: { split: spec.split, ...(spec.kind ? { kind: spec.kind } : {}) },
      select: { id: true },
      orderBy: { id: 'asc' },
    });
    ids = rows.map((r) => r.id);
  } else {
    throw new StudyError(
      'Give the study its tasks: a file of task ids (--tasks FILE), or --kind KIND and/or --sample N.',
    );
  }
  if (spec.sample === undefined) return ids;
  if (!Number.isInteger(spec.sample) || spec.sample < 1)
    throw new StudyError(`--sample must be a whole number of at least 1, got ${spec.sample}.`);
  if (spec.sample > ids.length)
    throw new StudyError(`--sample ${spec.sample} asks for more tasks than the ${ids.length} there are to draw from.`);
  return Rng.derive(spec.seed, 'study-sample')
    .shuffle([...ids].sort())
    .slice(0, spec.sample);
}

async function resolveArms(prisma: PrismaClient, spec: StudySpec): Promise<NewStudy['arms']> {
  if (spec.policy && spec.arms?.length) throw new StudyError('Give either --policy or --arm, not both.');
  const named = async (name: string) => {
    try {
      return (await resolvePolicyName(prisma, name)).id;
    } catch (err) {
      if (err instanceof PolicyError) throw new StudyError(err.message);
      throw err;
    }
  };
  if (spec.arms?.length) {
    const arms = [];
    for (const arm of spec.arms) {
      const m = /^(.+):(\d+)$/.exec(arm);
      if (!m)
        throw new StudyError(`--arm is VERSION:SHARE with the share in percent, e.g. sweet-0003:50, got "${arm}".`);
      arms.push({ policyVersionId: await named(m[1]!), share: Number(m[2]) });
    }
    return arms;
  }
  if (spec.policy) return [{ policyVersionId: await named(spec.policy), share: 100 }];
  const deployed = await deployedPolicy(prisma);
  if (!deployed)
    throw new StudyError('No policy version is deployed: name the one the study plays with --policy VERSION.');
  return [{ policyVersionId: deployed.id, share: 100 }];
}

/** The study to store for a command's words (the store checks the rest of the rules when it creates it). */
export async function resolveStudy(prisma: PrismaClient, spec: StudySpec): Promise<NewStudy> {
  const opensAt = parseDate('--opens', spec.opens);
  const closesAt = parseDate('--closes', spec.closes);
  return {
    name: spec.name,
    kind: spec.kind ?? null,
    split: spec.split,
    perTask: spec.perTask,
    seed: spec.seed,
    taskIds: await resolvePool(prisma, spec),
    arms: await resolveArms(prisma, spec),
    consentText: spec.consentText ?? null,
    payPerSessionCents: spec.payPerSession === undefined ? null : parseAmount('--pay-per-session', spec.payPerSession),
    bonusSuccessCents: spec.bonusSuccess === undefined ? null : parseAmount('--bonus-success', spec.bonusSuccess),
    currency: spec.currency?.toUpperCase() ?? null,
    maxSessionsPerPerson: spec.maxSessionsPerPerson ?? null,
    opensAt,
    closesAt,
    guildIds: spec.guildIds ?? [],
    channelIds: spec.channelIds ?? [],
    participantIdPlatform: spec.participantId ?? null,
    completionCode: spec.completionCode ?? null,
  };
}
