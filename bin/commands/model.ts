import type { Command } from 'commander';

export function registerModelCommands(program: Command): void {
  void program;
}
