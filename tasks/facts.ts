// What the rule-based collaborator knows of a reference: facts, each a sentence with the words it is about (and
// how central each word is), and how a question finds them: words shared with the question, weighted by rarity,
// the best one or two facts said, "I don't know" when none matches.
import { keywords, sentence, WEAK } from './words.ts';

export const DONT_KNOW = "I don't know.";
export interface Fact {
  text: string;
  /** token -> how central it is to the fact (1 = its name, less for surrounding words). */
  tokens: Map<string, number>;
  /** Facts that carry a concrete value are preferred when scores tie. */
  bonus: number;
}

function addTokens(tokens: Map<string, number>, words: string[], weight: number): void {
  for (const w of words) tokens.set(w, Math.max(tokens.get(w) ?? 0, weight));
}

export function makeFact(text: string, parts: [string, number][], bonus = 0): Fact {
  const tokens = new Map<string, number>();
  for (const [t, w] of parts) addTokens(tokens, keywords(t), w);
  return { text: sentence(text), tokens, bonus };
}

/** The questions in a message: split at question marks; a message without one is a single request. */
function questionsOf(message: string): string[] {
  const cleaned = message.replace(/```[\s\S]*?```/g, ' ');
  const parts = cleaned
    .split(/\?/)
    .map((s) => s.trim())
    .filter((s) => keywords(s).length > 0);
  return parts.length > 0 ? parts.slice(0, 4) : [];
}

export function answerFacts(facts: Fact[], message: string): string {
  if (facts.length === 0) return DONT_KNOW;
  const df = new Map<string, number>();
  for (const f of facts) for (const t of f.tokens.keys()) df.set(t, (df.get(t) ?? 0) + 1);
  const idf = (t: string) => Math.log(1 + facts.length / (df.get(t) ?? facts.length));

  const chosen: Fact[] = [];
  let unanswered = 0;
  for (const q of questionsOf(message)) {
    const qTokens = [...new Set(keywords(q))];
    let best: { fact: Fact; score: number } | undefined;
    let second: { fact: Fact; score: number } | undefined;
    for (const fact of facts) {
      let score = 0;
      let strong = false;
      for (const t of qTokens) {
        const w = fact.tokens.get(t);
        if (w === undefined) continue;
        const weak = WEAK.has(t);
        if (!weak) strong = true;
        score += idf(t) * w * (weak ? 0.3 : 1);
      }
      if (!strong || score < 0.25) continue;
      score += fact.bonus;
      if (!best || score > best.score) {
        second = best;
        best = { fact, score };
      } else if (!second || score > second.score) {
        second = { fact, score };
      }
    }
    if (!best) {
      unanswered++;
      continue;
    }
    if (!chosen.includes(best.fact)) chosen.push(best.fact);
    // A near tie usually means the question covers two facts (both cutoffs, both units).
    if (second && second.score >= 0.9 * best.score && !chosen.includes(second.fact)) chosen.push(second.fact);
  }
  if (chosen.length === 0) return DONT_KNOW;
  const said = chosen.slice(0, 2).map((f) => f.text);
  if (said.length === 1 && unanswered > 0) said.push("I don't know about the rest.");
  return said.join(' ');
}
