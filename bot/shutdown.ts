// How a long-running bot process ends: on SIGINT/SIGTERM it stops taking new work, lets what is in flight
// finish, closes what it opened, and exits by the deadline whatever hangs (an unreachable database or Discord
// would otherwise keep it alive for as long as their retries last).
import type { Logger } from '../tasks/logger.ts';

export interface Drainable {
  /** Stops taking work and waits (at most `deadlineMs`) for what is in flight; true when all of it finished. */
  shutdown(deadlineMs: number): Promise<boolean>;
}

const SIGNAL_EXIT: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };
const waiting = new Set<(signal: string) => void>();
let signals = 0;
function onStopSignal(signal: NodeJS.Signals): void {
  if (++signals > 1) process.exit(SIGNAL_EXIT[signal] ?? 1);
  for (const w of waiting) w(signal);
  waiting.clear();
}

/**
 * Resolves with the signal's name when the process is asked to stop (SIGINT/SIGTERM); a second one ends it at once
 * (exit 130/143). The handlers stay while the process shuts down: with `once`, a library's exit hook left as the
 * only listener (signal-exit's) re-raised the first SIGTERM and killed `npm start` before it had closed anything.
 */
export function untilSignal(): Promise<string> {
  if (!process.listeners('SIGINT').includes(onStopSignal)) {
    process.on('SIGINT', onStopSignal);
    process.on('SIGTERM', onStopSignal);
  }
  return new Promise((resolve) => waiting.add(resolve));
}

/**
 * Waits for a stop signal, then drains `service` and runs `close`; the process exits when `deadlineMs` has
 * passed since the signal even if either hangs.
 */
export async function serveUntilSignal(o: {
  service: Drainable;
  deadlineMs: number;
  close: () => Promise<void>;
  log?: Logger;
  onSignal?: () => void;
}): Promise<void> {
  const sig = await untilSignal();
  o.onSignal?.();
  o.log?.info({ signal: sig, deadlineMs: o.deadlineMs }, 'stopping: finishing turns in flight');
  setTimeout(() => {
    o.log?.warn({ deadlineMs: o.deadlineMs }, 'shutdown deadline reached; exiting');
    process.exit(0);
  }, o.deadlineMs).unref();
  // Leave a little of the deadline for closing the database and the client.
  const drained = await o.service.shutdown(Math.max(500, o.deadlineMs - Math.min(2_000, o.deadlineMs / 4)));
  o.log?.info({ drained }, 'turns in flight finished');
  await o.close();
}
