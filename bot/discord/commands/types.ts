// The shape of a slash command in the discord.js guide's layout: each file under commands/ exports its
// definition (what Discord registers) and its handler.
import type { ChatInputCommandInteraction, RESTPostAPIChatInputApplicationCommandsJSONBody } from 'discord.js';
import type { BotContext } from '../context.ts';

export interface SlashCommand {
  definition: RESTPostAPIChatInputApplicationCommandsJSONBody;
  execute(ctx: BotContext, i: ChatInputCommandInteraction): Promise<void>;
}
