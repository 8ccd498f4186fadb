// The starter's training dialogues (trainer/recipes/starter.ts): the expert's games on ColBench-mini tasks,
// the copy drills mixed in, answers compacted. The trainer's rehearsal replays the same mix.
import type { Agent, ChatMessage } from '../../tasks/agent.ts';
import { MINI_TEMPLATES } from '../../tasks/mini-templates.ts';
import { ANSWER_MARKER } from '../../tasks/protocol.ts';
import { seededRandom } from '../../tasks/random.ts';
import { copyDrills } from './copy-drills.ts';
import type { DemonstratorMix } from './demonstrator-mix.ts';
import type { StarterRecipe } from './starter-recipe.ts';

/** Plays the expert against the rule-based collaborator on ColBench-mini tasks; returns full dialogues. */
export async function expertDialogues(
  seed: number,
  games: number,
  mix?: DemonstratorMix,
  variedTasks = 0,
): Promise<ChatMessage[][]> {
  const [
    { generateMiniTasks },
    { createExpertAgent, createNonAskingAgent },
    { createRuleSimulator },
    { playEpisode, buildDialogue },
  ] = await Promise.all([
    import('../../tasks/mini.ts'),
    import('../../tasks/expert.ts'),
    import('../../tasks/simulator.ts'),
    import('../../tasks/protocol.ts'),
  ]);
  // Train-split tasks only: the test split is what the starter is evaluated on. Task i depends only on (seed, i),
  // so drawing more and keeping the train ones is still deterministic.
  if (!(variedTasks >= 0 && variedTasks <= 1))
    throw new Error(`starter: variedTasks must be between 0 and 1, got ${variedTasks}`);
  const trainTasks = (n: number, varied: boolean) =>
    generateMiniTasks({ seed, count: Math.ceil(n * 1.5) + 10, varied })
      .filter((t) => t.split === 'train')
      .slice(0, n);
  const nVaried = Math.round(games * variedTasks);
  // Varied and standard games alternate evenly, so that every stretch of the build sees both.
  const varied = trainTasks(nVaried, true);
  const standard = trainTasks(games - nVaried, false);
  const tasks = Array.from({ length: games }, (_, i) => {
    const v = Math.floor(((i + 1) * nVaried) / games) - Math.floor((i * nVaried) / games);
    return v ? varied.shift()! : standard.shift()!;
  });
  const expert = createExpertAgent({ tasks, name: 'expert' });
  // Each game's demonstrator: the careful expert, or one drawn from the mix.
  let demonstrator = (): Agent => expert;
  if (mix) {
    const total = mix.expert + mix.hasty + mix.noisy;
    if (!(total > 0) || [mix.expert, mix.hasty, mix.noisy].some((w) => !(w >= 0)))
      throw new Error('starter: demonstrator weights must be >= 0 with a positive sum');
    const hasty = createNonAskingAgent({ tasks, name: 'hasty' });
    const noisy = createExpertAgent({ tasks, noise: mix.noise, seed: seed ^ 0x6e6f, name: 'noisy' });
    const draw = seededRandom(seed, 0x6d6978);
    demonstrator = () => {
      const u = draw() * total;
      return u < mix.expert ? expert : u < mix.expert + mix.hasty ? hasty : noisy;
    };
  }
  const out: ChatMessage[][] = [];
  for (const task of tasks) {
    const episode = await playEpisode({ task, agent: demonstrator(), collaborator: createRuleSimulator(task) });
    out.push(buildDialogue(task, episode.turns));
  }
  return out;
}

/**
 * The expert's answer without the comment it copies onto each constant line (`NAME = value  # meaning`),
 * matched exactly against the template's own comments, so a value that contains `#` is never touched.
 */
export function compactAnswer(dialogue: readonly ChatMessage[], comments: readonly string[]): ChatMessage[] {
  return dialogue.map((m) => {
    if (m.role !== 'assistant' || !m.content.includes(ANSWER_MARKER)) return m;
    const lines = m.content.split('\n').map((line) => {
      const c = comments.find((comment) => line.endsWith(`  # ${comment}`));
      return c === undefined ? line : line.slice(0, line.length - c.length - 4);
    });
    return { ...m, content: lines.join('\n') };
  });
}

/** The dialogues as the recipe trains on them: answers compacted when it says so. */
export function compactAnswers(
  dialogues: readonly (readonly ChatMessage[])[],
  recipe: Pick<StarterRecipe, 'compactAnswers'>,
): readonly (readonly ChatMessage[])[] {
  if (!recipe.compactAnswers) return dialogues;
  const comments = MINI_TEMPLATES.flatMap((t) => t.facts.map((f) => f.comment));
  return dialogues.map((d) => compactAnswer(d, comments));
}

/**
 * The game phase's dialogues of a recipe: its expert games (part on varied tasks), the copy drills mixed in
 * after them, answers compacted. The trainer's rehearsal (trainer/rehearsal.ts) replays the same mix.
 */
export async function recipeGameDialogues(
  recipe: Pick<StarterRecipe, 'seed' | 'games' | 'demonstrators' | 'variedTasks' | 'copyDrills' | 'compactAnswers'>,
): Promise<readonly (readonly ChatMessage[])[]> {
  let dialogues: readonly (readonly ChatMessage[])[] = await expertDialogues(
    recipe.seed,
    recipe.games,
    recipe.demonstrators,
    recipe.variedTasks,
  );
  if (recipe.copyDrills) {
    if (!(recipe.copyDrills > 0)) throw new Error(`starter: copyDrills must be > 0, got ${recipe.copyDrills}`);
    dialogues = [...dialogues, ...copyDrills(recipe.seed, Math.round(recipe.games * recipe.copyDrills))];
  }
  return compactAnswers(dialogues, recipe);
}
