// The credit family's true move values (bench/credit/README.md, "The exact optimum" and "Design v7"): what each
// move is worth under optimal play afterwards, the oracle control's ranking and the critic check's yardstick. The
// budget is in expectation over what the state says of it, so since v7 (a budget drawn per game and told to no
// one) a wasted question costs the values it may lose, not a value for sure. Pure; the rules are credit.ts's.
import {
  creditBudgets,
  CREDIT_IDLE_COST,
  CREDIT_K,
  designSince,
  type CreditDesign,
  type MoveRecord,
} from './credit.ts';

/**
 * Whether a player in a move's state knows that nothing more can be obtained: every value told, a refusal seen,
 * or as many questions asked as the largest budget (before v7 the budget is K and told in the description).
 */
export function knownDone(
  m: Pick<MoveRecord, 'before' | 'asked' | 'spent'>,
  k = CREDIT_K,
  design: CreditDesign = 'v1',
): boolean {
  return m.before >= k || m.spent || m.asked >= Math.max(...creditBudgets(design, k));
}

/**
 * V*(s) under optimal play afterwards, in final-score units gained from here: n values told, a questions asked and
 * answered, the budget uniform over the design's budgets of at least a (a refusal ends it: answer at once).
 */
function stateValue(n: number, a: number, k: number, design: CreditDesign): number {
  if (n >= k) return 0;
  return Math.max(0, askValue(n, a, true, k, design), askValue(n, a, false, k, design));
}

/** Q*(s, a question) while values are missing and no refusal was seen; `seeks`: it names a key not told yet. */
function askValue(n: number, a: number, seeks: boolean, k: number, design: CreditDesign): number {
  const live = creditBudgets(design, k).filter((b) => b >= a);
  if (live.length === 0) return 0;
  const answered = live.filter((b) => b > a).length / live.length;
  const idle = designSince(design, 'v5') && n > 0 ? CREDIT_IDLE_COST : 0;
  const next = seeks ? 1 / k + stateValue(n + 1, a + 1, k, design) : stateValue(n, a + 1, k, design);
  return answered * next - (1 - answered) * idle;
}

/**
 * A*(s, a) = Q*(s, a) - V*(s) in final-score units under optimal play afterwards, the budget in expectation over
 * what the state says of it (v7; before v7 it is K and known): a useful question 0; a wasted question the values
 * it may cost (-1/K before v7 while values are missing and the budget has room); an idle question 0 (v5:
 * -CREDIT_IDLE_COST once a value is told, since the score is then above the floor); an answer -V*(s).
 */
export function trueMoveValue(m: MoveRecord, k = CREDIT_K, design: CreditDesign = 'v2'): number {
  const done = knownDone(m, k, design);
  const value = done ? 0 : stateValue(m.before, m.asked, k, design);
  if (m.move === 'answer') return value > 0 ? -value : 0; // V* >= 0; no -0
  if (done) return designSince(design, 'v5') && m.before > 0 ? -CREDIT_IDLE_COST : 0;
  return askValue(m.before, m.asked, m.seeks, k, design) - value;
}
