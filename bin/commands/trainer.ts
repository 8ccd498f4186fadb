import type { Command } from 'commander';

export function registerTrainerCommands(program: Command): void {
  void program;
}
