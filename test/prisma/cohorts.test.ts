// The cohort rules, against a real database: each where-clause, its SQL twin and its predicate pick the same
// participants and sessions out of rows planted to sit on every side of the rules.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Prisma } from '../../prisma/generated/client.ts';
import {
  consentedSql,
  consentedWhere,
  dialogueTurns,
  hasConsent,
  humanSessionSql,
  humanSessionWhere,
  isDialogueTurn,
  isSimulatedSession,
  personSql,
  personWhere,
  sharedParticipantSql,
  sharedParticipantWhere,
  simulatedSessionSql,
  simulatedSessionWhere,
  trainingParticipantWhere,
} from '../../prisma/cohorts.ts';
import { importTasks } from '../../prisma/task-store.ts';
import { builtinTasks } from '../../tasks/library.ts';
import { createTestDatabase } from '../../testing/database.ts';

type TestDb = Awaited<ReturnType<typeof createTestDatabase>>;
const day = (n: number) => new Date(Date.UTC(2026, 0, n));

// name -> the participant's columns; the name says which side of each rule it is on.
const PEOPLE = {
  consented: { consentGivenAt: day(1) },
  stranger: {},
  withdrawn: { consentGivenAt: null, consentWithdrawnAt: day(2) },
  withdrawnKeptDate: { consentGivenAt: day(1), consentWithdrawnAt: day(2) },
  erased: { consentGivenAt: null, consentWithdrawnAt: day(2), deletedAt: day(2) },
  bannedConsented: { consentGivenAt: day(1), banned: true },
  simulator: { role: 'simulated' as const },
  erasedSimulator: { role: 'simulated' as const, deletedAt: day(3) },
};
type Name = keyof typeof PEOPLE;

describe('cohorts', () => {
  let t: TestDb;
  const ids = new Map<string, Name>();
  const named = (rows: { id: string }[]) => rows.map((r) => ids.get(r.id)!).sort();
  beforeAll(async () => {
    t = await createTestDatabase();
    await importTasks(t.prisma, builtinTasks({ kind: 'backend' }).slice(0, 1), { split: 'train' });
    const task = await t.prisma.task.findFirstOrThrow();
    for (const [name, data] of Object.entries(PEOPLE)) {
      const p = await t.prisma.participant.create({ data: { discordUserId: `u:${name}`, ...data } });
      ids.set(p.id, name as Name);
      // Each person plays one session of each kind: flagged simulated, and not.
      for (const simulated of [false, true]) {
        const s = await t.prisma.session.create({
          data: { participantId: p.id, taskId: task.id, channel: 'console', simulated },
        });
        ids.set(s.id, `${name}${simulated ? ':flagged' : ''}` as Name);
      }
    }
  });
  afterAll(() => t?.drop());

  it('a participant consented only while consent is given and not withdrawn; the where-clause, SQL and predicate agree', async () => {
    const where = named(await t.prisma.participant.findMany({ where: consentedWhere }));
    const sql = named(
      await t.prisma.$queryRaw<{ id: string }[]>`SELECT id FROM "Participant" p WHERE ${consentedSql('p')}`,
    );
    const predicate = named((await t.prisma.participant.findMany()).filter(hasConsent));
    expect(where).toEqual(['bannedConsented', 'consented']);
    expect(sql).toEqual(where);
    expect(predicate).toEqual(where);
    expect(hasConsent(null)).toBe(false);
  });

  it('a person is anyone but a simulator, and not erased', async () => {
    const where = named(await t.prisma.participant.findMany({ where: personWhere }));
    expect(where).toEqual(['bannedConsented', 'consented', 'stranger', 'withdrawn', 'withdrawnKeptDate']);
    expect(
      named(await t.prisma.$queryRaw<{ id: string }[]>`SELECT id FROM "Participant" p WHERE ${personSql('p')}`),
    ).toEqual(where);
  });

  it('data may leave for consenting people and simulators not erased; training also leaves out the banned', async () => {
    const shared = named(await t.prisma.participant.findMany({ where: sharedParticipantWhere }));
    expect(shared).toEqual(['bannedConsented', 'consented', 'simulator']);
    expect(
      named(
        await t.prisma.$queryRaw<{ id: string }[]>`SELECT id FROM "Participant" p WHERE ${sharedParticipantSql('p')}`,
      ),
    ).toEqual(shared);
    expect(named(await t.prisma.participant.findMany({ where: trainingParticipantWhere }))).toEqual([
      'consented',
      'simulator',
    ]);
  });

  it("a session is simulated by its flag or by its participant's role; human sessions are all the others", async () => {
    const all = await t.prisma.session.findMany({ include: { participant: true } });
    const simulated = named(await t.prisma.session.findMany({ where: simulatedSessionWhere }));
    const human = named(await t.prisma.session.findMany({ where: humanSessionWhere }));
    expect(simulated).toEqual(named(all.filter((s) => isSimulatedSession(s, s.participant))));
    expect(human).toEqual(named(all.filter((s) => !isSimulatedSession(s, s.participant))));
    expect(simulated).toContain('simulator');
    expect(simulated).toContain('consented:flagged');
    expect(human).not.toContain('simulator');
    expect(simulated.length + human.length).toBe(all.length);
    const sql = (cond: Prisma.Sql) =>
      t.prisma.$queryRaw<
        { id: string }[]
      >`SELECT s.id FROM "Session" s JOIN "Participant" p ON p.id = s."participantId" WHERE ${cond}`;
    expect(named(await sql(simulatedSessionSql('s', 'p')))).toEqual(simulated);
    expect(named(await sql(humanSessionSql('s', 'p')))).toEqual(human);
  });

  it("the dialogue is the agent's and the collaborator's turns, in order, system notices left out", () => {
    const turns = [
      { role: 'human', content: 'second', index: 2 },
      { role: 'system', content: 'notice', index: 1 },
      { role: 'agent', content: 'first', index: 0 },
    ];
    expect(dialogueTurns(turns)).toEqual([
      { role: 'agent', content: 'first' },
      { role: 'human', content: 'second' },
    ]);
    expect(turns.filter(isDialogueTurn).map((x) => x.content)).toEqual(['second', 'first']);
  });
});
