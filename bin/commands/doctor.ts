import type { Command } from 'commander';

export function registerDoctorCommands(program: Command): void {
  void program;
}
