import type { Command } from 'commander';

export function registerBotCommands(program: Command): void {
  void program;
}
