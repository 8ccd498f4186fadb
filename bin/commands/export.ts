import type { Command } from 'commander';

export function registerExportCommands(program: Command): void {
  void program;
}
