// Scripted agents for ColBench-mini, used to make demonstrations with known quality.
//
// The expert knows each template's shape (what it can ask and how the function is built) but not the task's
// values: it asks about every withheld fact, reads the values out of the collaborator's replies, and answers
// with the function built from what it was told; a fact it was not told (skipped, "I don't know", unreadable
// reply) falls back to the common guess. The noisy variant sometimes skips a question, misreads a reply or
// answers early, so its games differ in reward. The non-asking agent answers at once with the guesses.
import type { Agent, AgentReply, ChatMessage } from './agent.ts';
import type { TaskRecord } from './model.ts';
import { ANSWER_MARKER, MAX_AGENT_TURNS } from './protocol.ts';
import {
  guessedValues,
  miniMeta,
  type FactSpec,
  type FactValue,
  type MiniMeta,
  type MiniTemplate,
  type Rng,
} from './mini-model.ts';
import { pick } from './mini-source.ts';
import { miniTemplate } from './mini-templates.ts';
import { createRng } from './random.ts';
import { keywords, splitSentences } from './words.ts';

export interface ExpertAgentOptions {
  /** The ColBench-mini tasks it may be asked to play; a game's task is found by its description. */
  tasks: readonly TaskRecord[];
  /** Probability of each kind of mistake (skip a question, misread a reply, answer early); 0 = none. */
  noise?: number;
  /** Seed of the mistakes; the same seed replays the same mistakes in the same order of games. */
  seed?: number;
  name?: string;
}

interface GamePlan {
  /** Keys asked in each turn, in order. */
  groups: string[][];
  /** Keys whose reply is read wrongly. */
  misread: Set<string>;
  /** Number of question turns before answering (fewer than groups.length when answering early). */
  questionTurns: number;
}

interface Game {
  task: TaskRecord;
  meta: MiniMeta;
  template: MiniTemplate;
}

export function createExpertAgent(options: ExpertAgentOptions): Agent {
  const noise = options.noise ?? 0;
  if (!(noise >= 0 && noise <= 1)) throw new Error(`noise must be between 0 and 1, got ${noise}`);
  const rng = createRng(options.seed ?? 0);
  const find = taskFinder(options.tasks);
  // One plan per task being played; a new game of the same task (no agent turn yet) draws a new plan.
  const plans = new Map<string, GamePlan>();

  return {
    name: options.name ?? (noise > 0 ? `expert-noisy-${noise}` : 'expert'),
    async reply(dialogue: ChatMessage[]): Promise<AgentReply> {
      const game = find(dialogue);
      const asked = dialogue.filter((m) => m.role === 'assistant').length;
      let plan = plans.get(game.task.externalId);
      if (!plan || asked === 0) {
        plan = makePlan(game, noise, rng);
        plans.set(game.task.externalId, plan);
      }
      const lastTurn = asked >= MAX_AGENT_TURNS - 1;
      if (asked < plan.questionTurns && !lastTurn) {
        const questions = (plan.groups[asked] ?? []).map((key) => questionFor(game.meta, key));
        const lead =
          asked === 0
            ? pick(rng, [
                'Happy to help. Before I write it, a few questions:',
                'Sure. A couple of things first:',
                'I can do that. Some questions first:',
              ])
            : pick(rng, ['Thanks!', 'Got it, thanks.', 'Thank you.']);
        return { text: `${lead} ${questions.join(' ')}` };
      }
      const values = valuesFromDialogue(game, dialogue, plan.misread, rng);
      return { text: `${ANSWER_MARKER}\n${game.template.build(game.meta.functionName, values)}` };
    },
  };
}

/** An agent that never asks: it answers at once with the template's common guesses. */
export function createNonAskingAgent(options: { tasks: readonly TaskRecord[]; name?: string }): Agent {
  const find = taskFinder(options.tasks);
  return {
    name: options.name ?? 'non-asking',
    async reply(dialogue) {
      const game = find(dialogue);
      return { text: `${ANSWER_MARKER}\n${game.template.build(game.meta.functionName, guessedValues(game.template))}` };
    },
  };
}

function taskFinder(tasks: readonly TaskRecord[]): (dialogue: ChatMessage[]) => Game {
  const byDescription = new Map<string, Game>();
  for (const task of tasks) {
    const meta = miniMeta(task);
    if (task.kind !== 'backend' || !meta) continue;
    // Two tasks may share a description (same request, different hidden values); they share the template and
    // function name too, which is all the expert takes from the task, so the first one serves both.
    if (!byDescription.has(task.description.trim()))
      byDescription.set(task.description.trim(), { task, meta, template: miniTemplate(meta.template) });
  }
  if (byDescription.size === 0)
    throw new Error('the scripted agents play ColBench-mini tasks only, and none were given');
  return (dialogue) => {
    const first = dialogue.find((m) => m.role === 'user')?.content.trim() ?? '';
    const game =
      byDescription.get(first) ?? [...byDescription.values()].find((g) => first.includes(g.task.description.trim()));
    if (!game) throw new Error('the scripted agent was given a task that is not one of its ColBench-mini tasks');
    return game;
  };
}

function makePlan(game: Game, noise: number, rng: Rng): GamePlan {
  const keys = game.meta.withheld.map((w) => w.key).filter(() => !(noise > 0 && rng() < noise));
  const groups: string[][] = [];
  for (let i = 0; i < keys.length; ) {
    // Noise-free experts ask two at a time; noisy ones vary the pace.
    const size = noise > 0 && rng() < 0.4 ? 1 : 2;
    groups.push(keys.slice(i, i + size));
    i += size;
  }
  const misread = new Set(keys.filter(() => noise > 0 && rng() < noise / 2));
  const early = noise > 0 && groups.length > 0 && rng() < noise;
  const questionTurns = Math.min(early ? Math.floor(rng() * groups.length) : groups.length, MAX_AGENT_TURNS - 1);
  return { groups, misread, questionTurns };
}

function questionFor(meta: MiniMeta, key: string): string {
  const q = meta.withheld.find((w) => w.key === key)?.question;
  if (!q) throw new Error(`task has no withheld fact ${key}`);
  return q;
}

/** Values told by the collaborator, one reply after each of the agent's questions; guesses for the rest. */
function valuesFromDialogue(
  game: Game,
  dialogue: ChatMessage[],
  misread: Set<string>,
  rng: Rng,
): Record<string, FactValue> {
  const values = guessedValues(game.template);
  const turns = dialogue.slice(dialogue.findIndex((m) => m.role === 'user') + 1);
  for (let i = 0; i < turns.length; i++) {
    const ask = turns[i];
    const answer = turns[i + 1];
    if (!ask || ask.role !== 'assistant' || !answer || answer.role !== 'user') continue;
    for (const w of game.meta.withheld) {
      if (!ask.content.includes(w.question)) continue;
      const spec = game.template.facts.find((f) => f.key === w.key);
      if (!spec) continue;
      const told = readFact(spec, answer.content);
      if (told === undefined) continue;
      values[w.key] = misread.has(w.key) ? misreadValue(spec, told, rng) : told;
    }
  }
  return values;
}

// ---------------------------------------------------------------------------------------------------------
// Reading a value out of a reply

const UNIT_ALIASES: Record<string, string[]> = {
  miles: ['mile', 'miles', 'mi'],
  kilometers: ['kilometer', 'kilometers', 'kilometre', 'kilometres', 'km'],
  meters: ['meter', 'meters', 'metre', 'metres'],
  yards: ['yard', 'yards', 'yd'],
  feet: ['foot', 'feet', 'ft'],
};

/**
 * The value of one fact in a reply, or undefined when the reply does not say it. The sentence that talks
 * about the fact (most words in common with its name and meaning) is read; within it, the text after the
 * fact's name if it is there.
 */
export function readFact(spec: FactSpec, reply: string): FactValue | undefined {
  const sentences = splitSentences(reply);
  if (sentences.length === 0) return undefined;
  const nameWords = spec.key.toLowerCase().split('_').join(' ');
  const about = new Set(keywords(`${nameWords} ${spec.comment}`));
  let best = sentences.length === 1 ? sentences[0] : undefined;
  let bestScore = 0;
  for (const s of sentences) {
    const words = new Set(keywords(s));
    let score = [...about].filter((w) => words.has(w)).length;
    if (s.toLowerCase().includes(nameWords)) score += 5;
    if (score > bestScore) {
      best = s;
      bestScore = score;
    }
  }
  if (!best || /^i (?:do not|don't|dont) know/i.test(best.trim())) return undefined;
  const at = best.toLowerCase().indexOf(`${nameWords} is `);
  const tail = at >= 0 ? best.slice(at + nameWords.length + 4) : best;

  switch (spec.kind) {
    case 'number': {
      const m = /-?\d+(?:\.\d+)?/.exec(tail);
      return m ? Number(m[0]) : undefined;
    }
    case 'string': {
      const m = /'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"/.exec(tail);
      if (!m) return undefined;
      return (m[1] ?? m[2] ?? '').replace(/\\(.)/g, '$1');
    }
    case 'boolean': {
      const m = /\b(true|yes|false|no|not|doesn't|does not|isn't)\b/i.exec(tail);
      if (!m) return undefined;
      return /^(true|yes)$/i.test(m[1] as string);
    }
    case 'choice': {
      let found: { option: string; index: number } | undefined;
      for (const option of spec.options ?? []) {
        for (const alias of UNIT_ALIASES[option] ?? [option]) {
          const m = new RegExp(`\\b${alias.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`, 'i').exec(tail);
          if (m && (!found || m.index < found.index)) found = { option, index: m.index };
        }
      }
      return found?.option;
    }
  }
}

function misreadValue(spec: FactSpec, value: FactValue, rng: Rng): FactValue {
  if (typeof value === 'boolean') return !value;
  const others = [...spec.pool, spec.guess].filter((v) => v !== value && typeof v === typeof value);
  if (others.length > 0) return pick(rng, others);
  return typeof value === 'number' ? value + 1 : `${value} `;
}
