// /mod experiment start|status|stop: A/B tests with real people (bot/experiments.ts). Registered by mod.ts, which
// has already checked the moderator permission and acknowledged the interaction. Start and stop are audited.
import { randomInt } from 'node:crypto';
import type { ChatInputCommandInteraction, SlashCommandSubcommandGroupBuilder } from 'discord.js';
import { ExperimentError, type ExperimentOutcome } from '../../../../prisma/experiment-store.ts';
import { PolicyError } from '../../../../prisma/policy-store.ts';
import { describeExperiment, formatExperimentStatus } from '../../../experiments.ts';
import { say, waitNotice, type BotContext } from '../../context.ts';

export function experimentGroup(g: SlashCommandSubcommandGroupBuilder): SlashCommandSubcommandGroupBuilder {
  return g
    .setName('experiment')
    .setDescription('A/B test a candidate version with real people')
    .addSubcommand((s) =>
      s
        .setName('start')
        .setDescription('Give a share of new sessions to a candidate version (blind to the person)')
        .addStringOption((o) => o.setName('candidate').setDescription('Candidate version name').setRequired(true))
        .addIntegerOption((o) => o.setName('share').setDescription('Percent of new sessions on the candidate (1-99)').setRequired(true).setMinValue(1).setMaxValue(99))
        .addIntegerOption((o) => o.setName('seed').setDescription('Seed of the arm assignment (default: random, shown in the status)')),
    )
    .addSubcommand((s) => s.setName('status').setDescription("Each arm's results with intervals, and the difference with its p-value"))
    .addSubcommand((s) =>
      s
        .setName('stop')
        .setDescription('End the experiment: promote deploys the candidate, discard keeps the deployed version')
        .addStringOption((o) =>
          o.setName('outcome').setDescription('promote or discard').setRequired(true).addChoices({ name: 'promote', value: 'promote' }, { name: 'discard', value: 'discard' }),
        ),
    );
}

type Handler = (ctx: BotContext, i: ChatInputCommandInteraction) => Promise<void>;

async function guarded(i: ChatInputCommandInteraction, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof ExperimentError || err instanceof PolicyError) return say(i, err.message);
    throw err;
  }
}

export const experimentHandlers: Record<string, Handler> = {
  start: (ctx, i) =>
    guarded(i, async () => {
      const share = i.options.getInteger('share', true);
      const seed = i.options.getInteger('seed') ?? randomInt(0, 2 ** 31);
      const e = await ctx.services.startExperiment(i.user.id, i.options.getString('candidate', true).trim(), share / 100, seed, waitNotice(i));
      await say(i, `Started. ${describeExperiment(e)}\nPeople are not told which version they play. Follow it with /mod experiment status.`);
    }),

  status: (ctx, i) =>
    guarded(i, async () => {
      const s = await ctx.services.experimentStatus(waitNotice(i));
      if (!s) return say(i, 'No experiment has been run yet. Start one with /mod experiment start.');
      const text = formatExperimentStatus(s.experiment, s.comparisons);
      await say(i, text.length > 2000 ? `${text.slice(0, 1990)}…` : text);
    }),

  stop: (ctx, i) =>
    guarded(i, async () => {
      const outcome = i.options.getString('outcome', true) as ExperimentOutcome;
      const { experiment, deployed } = await ctx.services.stopExperiment(i.user.id, outcome, waitNotice(i));
      if (deployed) await ctx.engine.refreshPolicy();
      await say(
        i,
        deployed
          ? `Experiment stopped: ${experiment.candidate.name} is promoted and deployed. New sessions use it; running sessions keep their version.`
          : `Experiment stopped and discarded: ${experiment.control.name} stays deployed.`,
      );
    }),
};
