// /mod experiment start|status|stop: A/B tests with real people, as the arms of the study that collects where the
// command is run (the one /task start joins there; usually the default study): start makes the deployed version
// (or the study's own policy) the control and the candidate the second arm with its share; stop promote deploys
// the candidate and leaves it alone in the study, discard leaves the control. The same as `sweetloop study arms`
// (prisma/experiment-store.ts; figures from bot/experiments.ts). Registered by mod.ts, which has already checked
// the permission (operators only) and acknowledged the interaction. Start and stop are audited.
import type { ChatInputCommandInteraction, SlashCommandSubcommandGroupBuilder } from 'discord.js';
import { ExperimentError, type ExperimentOutcome } from '../../../../prisma/experiment-store.ts';
import { PolicyError } from '../../../../prisma/policy-store.ts';
import { StudyError } from '../../../../prisma/study-store.ts';
import { describeExperiment, formatArmsStatus } from '../../../experiments-text.ts';
import { say, waitNotice, type BotContext } from '../../context.ts';
import { actorFor, authorityOf } from '../../permissions.ts';

export function experimentGroup(g: SlashCommandSubcommandGroupBuilder): SlashCommandSubcommandGroupBuilder {
  return g
    .setName('experiment')
    .setDescription('A/B test a candidate version with real people')
    .addSubcommand((s) =>
      s
        .setName('start')
        .setDescription(
          "Give the candidate a share of each task's sessions in this place's study (blind to the person)",
        )
        .addStringOption((o) => o.setName('candidate').setDescription('Candidate version name').setRequired(true))
        .addIntegerOption((o) =>
          o
            .setName('share')
            .setDescription("Percent of each task's sessions on the candidate (1-99)")
            .setRequired(true)
            .setMinValue(1)
            .setMaxValue(99),
        )
        .addBooleanOption((o) =>
          o
            .setName('force')
            .setDescription(
              'Operators only: a candidate trained on erased data (privacy delete) all the same; audited',
            ),
        ),
    )
    .addSubcommand((s) =>
      s.setName('status').setDescription("Each arm's results with intervals, and the difference with its p-value"),
    )
    .addSubcommand((s) =>
      s
        .setName('stop')
        .setDescription('End the experiment: promote deploys the candidate, discard keeps the deployed version')
        .addStringOption((o) =>
          o
            .setName('outcome')
            .setDescription('promote or discard')
            .setRequired(true)
            .addChoices({ name: 'promote', value: 'promote' }, { name: 'discard', value: 'discard' }),
        )
        .addBooleanOption((o) => o.setName('force').setDescription('{FORCE_DESC}')),
    );
}

type Handler = (ctx: BotContext, i: ChatInputCommandInteraction) => Promise<void>;

/** Who runs it (mod.ts let only operators reach these handlers; the rules check again). */
const actor = (ctx: BotContext, i: ChatInputCommandInteraction) =>
  actorFor(authorityOf(ctx.options, i) ?? 'moderator', i);

/** Where the command was run: its study is the one /task start joins there. */
const place = (i: ChatInputCommandInteraction) => ({ guildId: i.guildId, channelId: i.channelId });

async function guarded(i: ChatInputCommandInteraction, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof ExperimentError || err instanceof PolicyError || err instanceof StudyError)
      return say(i, err.message);
    throw err;
  }
}

export const experimentHandlers: Record<string, Handler> = {
  start: (ctx, i) =>
    guarded(i, async () => {
      const share = i.options.getInteger('share', true);
      const e = await ctx.services.startExperiment(
        actor(ctx, i),
        place(i),
        i.options.getString('candidate', true).trim(),
        share,
        waitNotice(i),
        i.options.getBoolean('force') ?? false,
      );
      await say(
        i,
        `Started. ${describeExperiment(e)}\nPeople are not told which version they play. Follow it with /mod experiment status.`,
      );
    }),

  status: (ctx, i) =>
    guarded(i, async () => {
      const s = await ctx.services.experimentStatus(place(i), waitNotice(i));
      if (!s.experiment && s.study.arms.length < 2)
        return say(i, `No experiment has been run yet in study ${s.study.name}. Start one with /mod experiment start.`);
      const text = formatArmsStatus(s);
      await say(i, text.length > 2000 ? `${text.slice(0, 1990)}…` : text);
    }),

  stop: (ctx, i) =>
    guarded(i, async () => {
      const outcome = i.options.getString('outcome', true) as ExperimentOutcome;
      const { experiment, version, deployed } = await ctx.services.stopExperiment(
        actor(ctx, i),
        place(i),
        outcome,
        waitNotice(i),
        i.options.getBoolean('force') ?? false,
      );
      if (deployed) await ctx.engine.refreshPolicy();
      await say(
        i,
        deployed
          ? `Experiment stopped: ${version.name} is promoted and deployed. New sessions use it; running sessions keep their version.`
          : `Experiment stopped and discarded: ${experiment?.control.name ?? 'the control'} plays on.`,
      );
    }),
};
