// Collaborator quality: pure signals computed from one finished session, and the scores they give a session and
// a person. A careless or gaming collaborator teaches the agent the wrong thing (a pasted reference makes every
// question "work"; one-word or instant replies carry no information), so the trainer can leave such data out.
//
// Signals of a session (each one with the measure it came from, so a moderator can judge it):
// - referencePasted: a long verbatim or near-verbatim stretch of the hidden reference in the person's replies.
//   ColBench's collaborator answers in natural language, so a run of code tokens copied from the reference is
//   not an answer. Only the reference's code counts (comments and docstrings explain the task in words, which
//   the person is asked to pass on). Text that is public anyway (the task description, e.g. the signature) does not count. Backend
//   only: the frontend reference is shown as a screenshot, so its HTML cannot be pasted, and quoting the page's
//   visible text is a legitimate answer.
// - emptyReplies: the share of replies that are empty or a single word.
// - tooFast: the share of replies sent sooner than one could read the agent's message.
// - ratingContradicts: a high rating of an answer that failed badly, or a low rating of one that succeeded.
// - abandoned: the person ended the session without an answer, or let it expire (an agent failure is not theirs).
// - goldFailed (gold checks only: the agent's side was replayed from a known session, bot/gold.ts): a reply
//   states a number the hidden information does not hold (nor the description, nor the question), i.e. the
//   person made a fact up. Numbers are what ColBench's hidden functions are made of (rates, thresholds, limits);
//   "I don't know" or a reply without numbers is always allowed.

import { pythonCode } from './python-facts.ts';

export interface QualityTurn {
  role: 'agent' | 'human';
  content: string;
  at: Date;
}

export interface QualitySession {
  kind: 'backend' | 'frontend';
  /** Backend: the reference function. Frontend: the reference page. */
  hiddenReference: string;
  /** What the agent (and everyone) sees: its overlap with the reference is public, not pasted. */
  description: string;
  turns: readonly QualityTurn[];
  status: 'active' | 'answered' | 'abandoned' | 'expired';
  endReason: string | null;
  evaluation: { score: number; success: boolean } | null;
  /** Mean 1-5 rating, or null when unrated. */
  rating: number | null;
  /** A gold check: the agent's side was replayed, the replies are checked against the hidden information. */
  gold?: boolean;
}

export interface QualityThresholds {
  /** Tokens per shingle: the unit of "verbatim". */
  shingle: number;
  /** A near-verbatim stretch of at least this many tokens counts as pasting... */
  pasteTokens: number;
  /** ...and so does covering at least this share of the reference's private shingles. */
  pasteShare: number;
  /** Matched stretches separated by at most this many tokens are one stretch (a changed name, a dropped comma). */
  gapTokens: number;
  /** Reading speed assumed for the agent's message (words a second; a fast skim is ~8). */
  readWordsPerSecond: number;
  /** A reply sent sooner than this is too fast whatever the message's length. */
  minReplyMs: number;
  /** A signal share (empty, too fast) at or above this fires the signal for the session. */
  shareToFire: number;
}

export const DEFAULT_THRESHOLDS: QualityThresholds = {
  shingle: 6,
  pasteTokens: 16,
  pasteShare: 0.3,
  gapTokens: 2,
  readWordsPerSecond: 8,
  minReplyMs: 1500,
  shareToFire: 0.5,
};

export interface PasteMeasure {
  /** Longest near-verbatim stretch of reference tokens in one reply. */
  longestTokens: number;
  /** Share of the reference's private shingles that appear in the replies. */
  share: number;
  /** The reply that held the longest stretch (index among the person's replies), -1 when none. */
  reply: number;
}

export interface SessionSignals {
  referencePasted: boolean;
  paste: PasteMeasure;
  /** Share of the person's replies that are empty or one word. */
  emptyShare: number;
  emptyReplies: boolean;
  /** Share of replies faster than the reading time of the message they answer. */
  fastShare: number;
  tooFast: boolean;
  ratingContradicts: boolean;
  abandoned: boolean;
  replies: number;
  /** Gold checks: the numbers replies stated that the hidden information does not allow (empty otherwise). */
  goldViolations: string[];
  goldFailed: boolean;
}

export const SIGNAL_NAMES = [
  'referencePasted',
  'emptyReplies',
  'tooFast',
  'ratingContradicts',
  'abandoned',
  'goldFailed',
] as const;
export type SignalName = (typeof SIGNAL_NAMES)[number];

/**
 * Code-aware tokens, lower-cased: identifiers and words, numbers, and each other non-space character alone.
 * Whitespace, case, quotes and backticks are ignored, so re-indented or markdown-fenced code still matches.
 */
export function tokens(text: string): string[] {
  return text.toLowerCase().match(/[a-z_][a-z0-9_]*|\d+(?:\.\d+)?|[^\s\w`'"]/g) ?? [];
}

function shingles(toks: readonly string[], k: number): Set<string> {
  const out = new Set<string>();
  for (let i = 0; i + k <= toks.length; i++) out.add(toks.slice(i, i + k).join('\u0001'));
  return out;
}

/** How much of the reference's private text (not in the description) the replies reproduce. */
export function pasteMeasure(
  reference: string,
  description: string,
  replies: readonly string[],
  t: QualityThresholds = DEFAULT_THRESHOLDS,
): PasteMeasure {
  const k = t.shingle;
  const publicShingles = shingles(tokens(description), k);
  const privateShingles = new Set([...shingles(tokens(reference), k)].filter((s) => !publicShingles.has(s)));
  const seen = new Set<string>();
  let longest = 0;
  let where = -1;
  replies.forEach((reply, r) => {
    const toks = tokens(reply);
    // covered[i]: token i lies in a k-token window that is a private shingle of the reference.
    const covered = new Array<boolean>(toks.length).fill(false);
    for (let i = 0; i + k <= toks.length; i++) {
      const sh = toks.slice(i, i + k).join('\u0001');
      if (!privateShingles.has(sh)) continue;
      seen.add(sh);
      for (let j = i; j < i + k; j++) covered[j] = true;
    }
    // Longest stretch of covered tokens, bridging gaps of at most gapTokens uncovered ones.
    let start = -1;
    let lastCovered = -1;
    let count = 0;
    for (let i = 0; i < toks.length; i++) {
      if (!covered[i]) continue;
      if (start < 0 || i - lastCovered - 1 > t.gapTokens) {
        start = i;
        count = 0;
      }
      count++;
      lastCovered = i;
      if (count > longest) {
        longest = count;
        where = r;
      }
    }
  });
  return { longestTokens: longest, share: privateShingles.size ? seen.size / privateShingles.size : 0, reply: where };
}

/** The numbers written in a text (signed, with decimals). */
export function numbersIn(text: string): number[] {
  return (text.match(/-?\d+(?:\.\d+)?/g) ?? []).map(Number).filter(Number.isFinite);
}

/** A number and the forms a person may say it in: as a percentage (15 for 0.15) and as a fraction (0.15 for 15). */
export function numberForms(n: number): number[] {
  return [n, Math.round(n * 100 * 1e9) / 1e9, Math.round((n / 100) * 1e9) / 1e9];
}

/**
 * The numbers a reply states that nothing the person was shown allows: not in the hidden reference, the task
 * description or the agent's question, also read as a percentage (15% for 0.15) or a fraction (0.15 for 15).
 */
export function goldViolations(reference: string, description: string, question: string, reply: string): string[] {
  const allowed = new Set<number>();
  for (const n of numbersIn(`${reference}\n${description}\n${question}`))
    for (const f of numberForms(n)) allowed.add(f);
  const stated = reply.match(/-?\d+(?:\.\d+)?/g) ?? [];
  return stated.filter((t) => !allowed.has(Number(t)));
}

/** Empty, or a single word (what "ok", "yes" or "idk" carry is not an answer to a question). */
export function isEmptyReply(text: string): boolean {
  return (
    text
      .trim()
      .split(/\s+/)
      .filter((w) => /\w/.test(w)).length <= 1
  );
}

/** The least time a person needs to read an agent message before answering it. */
export function readingMs(agentMessage: string, t: QualityThresholds = DEFAULT_THRESHOLDS): number {
  const words = agentMessage.trim().split(/\s+/).filter(Boolean).length;
  return Math.max(t.minReplyMs, (1000 * words) / t.readWordsPerSecond);
}

/** A rating the evaluation contradicts: 4-5 for an answer scoring at most 0.2, or 1-2 for a success. */
export function ratingContradicts(
  rating: number | null,
  evaluation: { score: number; success: boolean } | null,
): boolean {
  if (rating === null || !evaluation) return false;
  return (rating >= 4 && evaluation.score <= 0.2) || (rating <= 2 && evaluation.success);
}

/** The person left the session without an answer (an agent failure or a ban is not counted against them). */
export function wasAbandoned(s: Pick<QualitySession, 'status' | 'endReason'>): boolean {
  if (s.status !== 'abandoned' && s.status !== 'expired') return false;
  const why = s.endReason ?? '';
  return !why.startsWith('agent-error') && why !== 'banned';
}

/** The paste measure of a session's replies (backend only: a frontend reference is seen as a screenshot). */
export function referencePaste(
  kind: QualitySession['kind'],
  reference: string,
  description: string,
  replies: readonly string[],
  t: QualityThresholds = DEFAULT_THRESHOLDS,
): PasteMeasure {
  // Against the code only: its comments and docstrings are the task's explanation, which the person may paraphrase.
  return kind === 'backend'
    ? pasteMeasure(pythonCode(reference), description, replies, t)
    : { longestTokens: 0, share: 0, reply: -1 };
}

/** Whether a paste measure means the reference was pasted: one long stretch, or a large share in shorter ones. */
export function isPasted(paste: PasteMeasure, t: QualityThresholds = DEFAULT_THRESHOLDS): boolean {
  return paste.longestTokens >= t.pasteTokens || (paste.share >= t.pasteShare && paste.longestTokens >= t.shingle);
}

export function sessionSignals(s: QualitySession, t: QualityThresholds = DEFAULT_THRESHOLDS): SessionSignals {
  const ordered = [...s.turns].sort((a, b) => a.at.getTime() - b.at.getTime());
  const replies: string[] = [];
  const violations: string[] = [];
  let fast = 0;
  let lastAgent: QualityTurn | null = null;
  for (const turn of ordered) {
    if (turn.role === 'agent') {
      lastAgent = turn;
      continue;
    }
    replies.push(turn.content);
    if (s.gold && s.kind === 'backend')
      violations.push(...goldViolations(s.hiddenReference, s.description, lastAgent?.content ?? '', turn.content));
    if (lastAgent && turn.at.getTime() - lastAgent.at.getTime() < readingMs(lastAgent.content, t)) fast++;
  }
  const empty = replies.filter(isEmptyReply).length;
  const paste = referencePaste(s.kind, s.hiddenReference, s.description, replies, t);
  const emptyShare = replies.length ? empty / replies.length : 0;
  const fastShare = replies.length ? fast / replies.length : 0;
  return {
    referencePasted: isPasted(paste, t),
    paste,
    emptyShare,
    emptyReplies: replies.length > 0 && emptyShare >= t.shareToFire,
    fastShare,
    tooFast: replies.length > 0 && fastShare >= t.shareToFire,
    ratingContradicts: ratingContradicts(s.rating, s.evaluation),
    abandoned: wasAbandoned(s),
    replies: replies.length,
    goldViolations: violations,
    goldFailed: violations.length > 0,
  };
}

/**
 * A session's quality in [0, 1]: 0 when the reference was pasted (the data is worthless), otherwise 1 less a
 * penalty for each weakness, graded by its share where it has one (a failed gold check costs half).
 */
export function sessionScore(sig: SessionSignals): number {
  if (sig.referencePasted) return 0;
  const penalty =
    0.35 * sig.emptyShare +
    0.35 * sig.fastShare +
    (sig.ratingContradicts ? 0.2 : 0) +
    (sig.abandoned ? 0.1 : 0) +
    (sig.goldFailed ? 0.5 : 0);
  return Math.max(0, Math.min(1, 1 - penalty));
}

export interface PersonQuality {
  /** Mean of the sessions' scores (NaN with no session). */
  score: number;
  sessions: number;
  /** Sessions in which each signal fired. */
  counts: Record<SignalName, number>;
}

export function personQuality(sessions: readonly SessionSignals[]): PersonQuality {
  const counts = Object.fromEntries(SIGNAL_NAMES.map((n) => [n, 0])) as Record<SignalName, number>;
  let sum = 0;
  for (const s of sessions) {
    sum += sessionScore(s);
    for (const n of SIGNAL_NAMES) if (s[n]) counts[n]++;
  }
  return { score: sessions.length ? sum / sessions.length : NaN, sessions: sessions.length, counts };
}

/** The signals that fired, for a listing ("referencePasted x2, tooFast x1"); "none" when none did. */
export function formatSignals(counts: Partial<Record<SignalName, number>>): string {
  const fired = SIGNAL_NAMES.filter((n) => (counts[n] ?? 0) > 0).map((n) => `${n} x${counts[n]}`);
  return fired.length ? fired.join(', ') : 'none';
}
