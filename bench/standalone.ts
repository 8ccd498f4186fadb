// For bench modules that other benchmarks import and that also run on their own (`npx tsx bench/x.ts`).
import { pathToFileURL } from 'node:url';

/** Runs `main` when the module at `moduleUrl` is the script node started, not when it is imported; a failure prints its message and exits 1. */
export function runWhenMain(moduleUrl: string, main: () => Promise<void>): void {
  if (!process.argv[1] || moduleUrl !== pathToFileURL(process.argv[1]).href) return;
  main().catch((err) => {
    console.error((err as Error).message);
    process.exit(1);
  });
}
