// The registry of Sweetloop's slash commands: one file per top-level command, looked up by name.
import { compare } from './compare.ts';
import { mod } from './mod/index.ts';
import { privacy } from './privacy.ts';
import { task } from './task.ts';
import type { SlashCommand } from './types.ts';

export const commands: ReadonlyMap<string, SlashCommand> = new Map([
  ['task', task],
  ['privacy', privacy],
  ['mod', mod],
  ['compare', compare],
]);

export function commandDefinitions(): SlashCommand['definition'][] {
  return [...commands.values()].map((c) => c.definition);
}
