// The pure parts of a study's progress (bot/study-progress.ts): the projected completion from the rate sessions
// are answered at, and which studies a /mod user may see. (The database parts run in
// test/bin/commands/study.test.ts and test/bot/discord/study-status.test.ts.)
import { describe, expect, it } from 'vitest';
import {
  PROJECTION_MIN_SESSIONS,
  PROJECTION_WINDOW_MS,
  projectCompletion as project,
  projectionWindow,
  studyVisibleTo,
} from '../../bot/study-progress.ts';

const hour = 3600_000;
const now = new Date('2027-01-20T12:00:00Z');
const ago = (h: number) => new Date(now.getTime() - h * hour);

/** The projection of sessions answered at these moments, counted in projectionWindow as the database counts them. */
function projectCompletion(o: {
  remaining: number | null;
  answeredAt: Date[];
  firstStartedAt: Date | null;
  now: Date;
}) {
  const w = projectionWindow(o.now);
  const recent = o.answeredAt.filter((d) => d > w.from && d <= w.to).length;
  return project({
    remaining: o.remaining,
    answered: o.answeredAt.length,
    recent,
    firstStartedAt: o.firstStartedAt,
    now: o.now,
  });
}

describe('projectCompletion', () => {
  it('projects at the rate of the last 24 h when enough sessions were answered in them', () => {
    // 6 answered in the last 24 h: 6 a day; 12 slots left: 2 days from now.
    const p = projectCompletion({
      remaining: 12,
      answeredAt: [1, 3, 5, 7, 9, 11].map(ago).concat([ago(100)]),
      firstStartedAt: ago(200),
      now,
    });
    expect(p).toEqual({
      state: 'projected',
      remaining: 12,
      at: new Date('2027-01-22T12:00:00Z'),
      perDay: 6,
      basis: 'last-24h',
    });
    expect(PROJECTION_WINDOW_MS).toBe(24 * hour);
    expect(projectionWindow(now)).toEqual({ from: ago(24), to: now });
  });

  it('falls back to the rate since the first session when the last 24 h are quiet', () => {
    // 4 answered since the first session 96 h ago: 1 a day; 3 slots left: 3 days from now.
    const p = projectCompletion({ remaining: 3, answeredAt: [30, 50, 70, 90].map(ago), firstStartedAt: ago(96), now });
    expect(p).toEqual({
      state: 'projected',
      remaining: 3,
      at: new Date('2027-01-23T12:00:00Z'),
      perDay: expect.closeTo(1, 9),
      basis: 'since-first',
    });
  });

  it('says there is not enough data with too few answered sessions', () => {
    const few = Array.from({ length: PROJECTION_MIN_SESSIONS - 1 }, (_, i) => ago(i + 1));
    expect(projectCompletion({ remaining: 5, answeredAt: few, firstStartedAt: ago(48), now })).toEqual({
      state: 'not-enough-data',
      remaining: 5,
    });
    expect(projectCompletion({ remaining: 5, answeredAt: [], firstStartedAt: null, now })).toEqual({
      state: 'not-enough-data',
      remaining: 5,
    });
  });

  it('is complete with no slot left, and has no end without k', () => {
    expect(projectCompletion({ remaining: 0, answeredAt: [], firstStartedAt: null, now })).toEqual({
      state: 'complete',
    });
    expect(projectCompletion({ remaining: null, answeredAt: [ago(1)], firstStartedAt: ago(2), now })).toEqual({
      state: 'no-k',
    });
  });
});

describe('studyVisibleTo', () => {
  const bound = { guildIds: ['g1'], channelIds: [] };
  const channelBound = { guildIds: [], channelIds: ['c1'] };
  const unbound = { guildIds: [], channelIds: [] };
  const modOfG1 = { operator: false, guildId: 'g1' };
  const modOfG2 = { operator: false, guildId: 'g2' };

  it("shows a moderator their guild's studies (by guild or by one of its channels) and the unbound ones", () => {
    expect(studyVisibleTo(bound, modOfG1)).toBe(true);
    expect(studyVisibleTo(unbound, modOfG1)).toBe(true);
    expect(studyVisibleTo(channelBound, modOfG1, new Set(['c1']))).toBe(true);
  });

  it("hides another guild's studies from a moderator, and shows an operator everything", () => {
    expect(studyVisibleTo(bound, modOfG2)).toBe(false);
    expect(studyVisibleTo(channelBound, modOfG2, new Set(['c2']))).toBe(false);
    expect(studyVisibleTo(bound, { operator: true, guildId: 'g2' })).toBe(true);
    expect(studyVisibleTo(channelBound, { operator: true, guildId: null })).toBe(true);
  });
});
