// Who counts: the rules that decide whose sessions are simulated, who is a person, who consented, whose data may
// leave in an export or train the agent, and which turns are the dialogue. Every query and check asks here, as a
// Prisma where-clause, a raw SQL condition or a predicate, so that the rules are spelled once.
import { Prisma } from './generated/client.ts';
import type { DialogueTurn } from '../tasks/protocol.ts';

/** The participant role of rule-based and LLM collaborators: never people, so they need no consent. */
export const SIMULATED_ROLE = 'simulated';
const SIMULATED_SQL = Prisma.raw(`'${SIMULATED_ROLE}'`);

/** A session was played by a simulated collaborator: its own flag, or a participant with the simulated role. */
export function isSimulatedSession(session: { simulated: boolean }, participant: { role: string }): boolean {
  return session.simulated || participant.role === SIMULATED_ROLE;
}

export const simulatedSessionWhere = {
  OR: [{ simulated: true }, { participant: { role: SIMULATED_ROLE } }],
} satisfies Prisma.SessionWhereInput;

/** A session played by a person: neither flagged simulated nor played by a simulated participant. */
export const humanSessionWhere = {
  simulated: false,
  participant: { role: { not: SIMULATED_ROLE } },
} satisfies Prisma.SessionWhereInput;

/** A person: not a simulated collaborator, and not erased (an erased person's row is only a pseudonym). */
export const personWhere = { role: { not: SIMULATED_ROLE }, deletedAt: null } satisfies Prisma.ParticipantWhereInput;

/** personWhere as SQL over the participant table's alias `alias`. */
export function personSql(alias: string): Prisma.Sql {
  const a = Prisma.raw(alias);
  return Prisma.sql`(${a}."role" <> ${SIMULATED_SQL} AND ${a}."deletedAt" IS NULL)`;
}

/** Consent given and not withdrawn since (a withdrawal clears neither row nor sessions, only this). */
export function hasConsent(
  p: { consentGivenAt: Date | null; consentWithdrawnAt: Date | null } | null | undefined,
): boolean {
  return !!p?.consentGivenAt && !p.consentWithdrawnAt;
}

export const consentedWhere = {
  consentGivenAt: { not: null },
  consentWithdrawnAt: null,
} satisfies Prisma.ParticipantWhereInput;

/** consentedWhere as SQL over the participant table's alias `alias`. */
export function consentedSql(alias: string): Prisma.Sql {
  const a = Prisma.raw(alias);
  return Prisma.sql`(${a}."consentGivenAt" IS NOT NULL AND ${a}."consentWithdrawnAt" IS NULL)`;
}

/** A participant whose data may leave the database (exports, ratings, preferences): not erased, and consented or simulated. */
export const sharedParticipantWhere = {
  deletedAt: null,
  OR: [consentedWhere, { role: SIMULATED_ROLE }],
} satisfies Prisma.ParticipantWhereInput;

/** The same rule as SQL over the participant table's alias `alias`, for the exports' raw keyset queries. */
export function sharedParticipantSql(alias: string): Prisma.Sql {
  const a = Prisma.raw(alias);
  return Prisma.sql`(${a}."deletedAt" IS NULL AND (${consentedSql(alias)} OR ${a}."role" = ${SIMULATED_SQL}))`;
}

/** simulatedSessionWhere as SQL over the aliases of the session and participant tables. */
export function simulatedSessionSql(session: string, participant: string): Prisma.Sql {
  return Prisma.sql`(${Prisma.raw(session)}."simulated" = true OR ${Prisma.raw(participant)}."role" = ${SIMULATED_SQL})`;
}

/** humanSessionWhere as SQL over the aliases of the session and participant tables. */
export function humanSessionSql(session: string, participant: string): Prisma.Sql {
  return Prisma.sql`(${Prisma.raw(session)}."simulated" = false AND ${Prisma.raw(participant)}."role" <> ${SIMULATED_SQL})`;
}

/** A participant whose sessions may train the agent: shared, and neither banned nor excluded by a moderator. */
export const trainingParticipantWhere = {
  ...sharedParticipantWhere,
  banned: false,
  trainingExclusion: { is: null },
} satisfies Prisma.ParticipantWhereInput;

/** The turns of the dialogue: the agent's and the collaborator's (system notices are not part of it). */
export const dialogueTurnWhere = { role: { in: ['agent', 'human'] } } satisfies Prisma.TurnWhereInput;

export function isDialogueTurn<T extends { role: string }>(t: T): t is T & { role: 'agent' | 'human' } {
  return t.role === 'agent' || t.role === 'human';
}

/** The dialogue turns of a session as the protocol sees them, in order (by `index` where the turns have one). */
export function dialogueTurns(turns: readonly { role: string; content: string; index?: number }[]): DialogueTurn[] {
  return turns
    .filter(isDialogueTurn)
    .sort((a, b) => (a.index ?? 0) - (b.index ?? 0))
    .map((t) => ({ role: t.role, content: t.content }));
}
