// Copy drills for the starter's pre-training: short dialogues in which the person gives a list of items
// (made-up identifiers, numbers, quoted strings, Python literals) and the assistant writes them back exactly.
// The demonstration games hold only a handful of tokens that must be copied from the dialogue (the function
// name, the told values); a drill holds dozens, which is what a small model needs before attention learns to
// look up a token's earlier occurrence and copy what followed it (an induction head). Same system prompt as
// the games, so the shared-prefix batching still applies. Imports tasks/ only.
import type { ChatMessage } from '../../tasks/agent.ts';
import type { Rng } from '../../tasks/mini-model.ts';
import { pick, py } from '../../tasks/mini-source.ts';
import { MINI_TEMPLATES } from '../../tasks/mini-templates.ts';
import { agentSystemPrompt, MAX_AGENT_TURNS } from '../../tasks/protocol.ts';
import { seededRandom } from '../../tasks/random.ts';

// Made-up identifiers, 26 x 26 of them: the drills teach copying names never seen before, not remembering a few.
const NAME_VERBS = [
  'compute',
  'get',
  'calc',
  'find',
  'make',
  'work_out',
  'figure',
  'price',
  'check',
  'format',
  'convert',
  'rate',
  'score',
  'count',
  'judge',
  'build',
  'give',
  'show',
  'total',
  'label',
  'grade',
  'measure',
  'quote',
  'bill',
  'tally',
  'derive',
];
const NAME_NOUNS = [
  'amount',
  'value',
  'result',
  'total',
  'charge',
  'fee',
  'band',
  'line',
  'change',
  'cost',
  'price',
  'score',
  'level',
  'figure',
  'answer',
  'output',
  'number',
  'text',
  'status',
  'verdict',
  'sum',
  'rate',
  'mark',
  'tag',
  'entry',
  'report',
];

function madeUpName(rand: Rng): string {
  return `${pick(rand, NAME_VERBS)}_${pick(rand, NAME_NOUNS)}`;
}

const DRILL_OPENERS = ['Copy this exactly:', 'Please write back exactly this:', 'Repeat after me:'];

/** One item: the kinds of text a game's answer copies from the dialogue. */
function item(rand: () => number): string {
  const u = rand();
  if (u < 0.3) return madeUpName(rand);
  if (u < 0.45) return pick(rand, MINI_TEMPLATES).functionName;
  if (u < 0.75) {
    const decimals = pick(rand, [0, 0, 1, 2]);
    return String(Math.round(rand() * 300 * 10 ** decimals) / 10 ** decimals);
  }
  if (u < 0.85) return py(rand() < 0.5);
  const fact = pick(
    rand,
    MINI_TEMPLATES.flatMap((t) => t.facts.filter((f) => f.kind === 'string' || f.kind === 'choice')),
  );
  return py(pick(rand, fact.pool));
}

/** `count` drills, deterministic in the seed. */
export function copyDrills(seed: number, count: number): ChatMessage[][] {
  const rand = seededRandom(seed, 0x636f7079);
  const system = agentSystemPrompt('backend', MAX_AGENT_TURNS);
  return Array.from({ length: count }, () => {
    const items = Array.from({ length: 6 + Math.floor(rand() * 14) }, () => item(rand));
    return [
      { role: 'system', content: system },
      { role: 'user', content: `${pick(rand, DRILL_OPENERS)} ${items.join(' ')}` },
      { role: 'assistant', content: items.join(' ') },
    ];
  });
}
