// Copy drills in the credit family's shapes (bench/credit/README.md, amendment of 2026-12-06), for the credit
// starter's copy-drill phase (trainer/recipes/starter.ts copyDrillPhase, given as its drillDialogues). The
// family's answer copies a value looked up by its key (`"speed": 4` from "The speed is 4." said turns
// earlier) and its questions copy a key from the description's list; a generic "write this back" drill
// (trainer/recipes/copy-drills.ts) teaches copying in order, not by key. The drills use made-up keys as well
// as the pool's, values beyond the family's 1-9, and teach no move of the game: no question is asked and no
// answer marker is written, so what to ask and when to answer is still learnt from the demonstrator alone.
import type { ChatMessage } from './agent.ts';
import {
  creditAnswer,
  creditReply,
  designSince,
  CREDIT_KEYS,
  generateCreditTasks,
  parseCreditReference,
  question,
  type CreditDesign,
} from './credit.ts';
import { agentSystemPrompt, buildDialogue, MAX_AGENT_TURNS } from './protocol.ts';
import { Rng } from './random.ts';

// Made-up keys beside the pool's, so that the drills teach looking a key up, not remembering the pool's.
const SYLLABLES = ['ba', 'ko', 'mi', 'ta', 'ru', 'ne', 'so', 'li', 'pa', 'du', 've', 'gi', 'zo', 'fa', 'he', 'wu'];

function key(rng: Rng): string {
  if (rng.next() < 0.5) return CREDIT_KEYS[Math.floor(rng.next() * CREDIT_KEYS.length)]!;
  const n = 2 + Math.floor(rng.next() * 2);
  return Array.from({ length: n }, () => SYLLABLES[Math.floor(rng.next() * SYLLABLES.length)]!).join('');
}

const list = (xs: readonly string[]) =>
  xs.length > 1 ? `${xs.slice(0, -1).join(', ')} and ${xs[xs.length - 1]}` : xs[0]!;

/**
 * One drill: the person says 3-6 values, one sentence each as the collaborator says them ("The speed is 4."),
 * then names some of the keys in another order; the assistant writes those keys with their values as a dict,
 * in the order named ("lookup"). Or the person names keys and the assistant writes the list back ("keys").
 */
function drill(rng: Rng): string[] {
  const keys: string[] = [];
  const n = 3 + Math.floor(rng.next() * 4);
  while (keys.length < n) {
    const k = key(rng);
    if (!keys.includes(k)) keys.push(k);
  }
  if (rng.next() < 0.25) {
    return [`Here are the keys ${list(keys)}. Write them back.`, keys.join(', ')];
  }
  const values = keys.map(() => (rng.next() < 0.7 ? 1 + Math.floor(rng.next() * 9) : 10 + Math.floor(rng.next() * 90)));
  const told = keys.map((k, i) => `The ${k} is ${values[i]}.`).join(' ');
  const wanted = rng.shuffle(keys.map((_, i) => i)).slice(0, 2 + Math.floor(rng.next() * (n - 1)));
  return [
    `${told} Write a dict with the keys ${list(wanted.map((i) => keys[i]!))}.`,
    `{${wanted.map((i) => `"${keys[i]}": ${values[i]}`).join(', ')}}`,
  ];
}

/** `count` credit drills, deterministic in the seed; the same system prompt as the family's games. */
export function creditDrills(seed: number, count: number): ChatMessage[][] {
  const rng = Rng.derive(seed, 'credit-drills', 0);
  const system = agentSystemPrompt('backend', MAX_AGENT_TURNS);
  return Array.from({ length: count }, () => {
    const [user, assistant] = drill(rng);
    return [
      { role: 'system', content: system },
      { role: 'user', content: user! },
      { role: 'assistant', content: assistant! },
    ];
  });
}

/**
 * Matching drills for design v3's starter (bench/credit/README.md, "The v3 starter"): games of the optimum on
 * train-split tasks, the keys asked in a random order, so that the next question is always a key not told yet.
 * Under the demonstrator's mixture a told key is asked 0.5 : 0.175 against an untold one after a new value, a
 * contrast these small decoders did not pick up in 1,500 updates; here it is all or nothing.
 */
export function creditMatchingDrills(seed: number, count: number, design: CreditDesign = 'v3'): ChatMessage[][] {
  const rng = Rng.derive(seed, 'credit-matching', 0);
  // v3's tasks; a later design's only where its description differs (v7 names a range of budgets).
  const tasksOf = designSince(design, 'v7') ? design : 'v3';
  return generateCreditTasks({ seed, count, split: 'train', design: tasksOf }).map((task) => {
    const t = parseCreditReference(task.reference);
    const turns: { role: 'agent' | 'human'; content: string }[] = [];
    const asked: string[] = [];
    const told = new Map<string, number>();
    for (const k of rng.shuffle([...t.keys])) {
      const q = question(k);
      turns.push({ role: 'agent', content: q }, { role: 'human', content: creditReply(t, asked, q).reply });
      asked.push(q);
      told.set(k, t.values[t.keys.indexOf(k)]!);
    }
    turns.push({ role: 'agent', content: creditAnswer(t.keys, told, design) });
    return buildDialogue(task, turns);
  });
}
