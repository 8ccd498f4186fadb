// The export's progress bar on a terminal (`sweetloop export`); nothing when the output is not a TTY.
import { progressBar } from '../../tasks/progress-bar.ts';

/** A progress bar on a terminal (none when `stream` is not a TTY, e.g. in CI or a pipe). */
export function terminalProgress(
  stream: NodeJS.WriteStream,
  label: string,
): { onProgress?: (done: number, total: number) => void; stop: () => void } {
  if (!stream.isTTY) return { stop: () => {} };
  const bar = progressBar(stream, `${label} [{bar}] {percentage}% | {value}/{total} sessions | {left}`);
  let started = false;
  return {
    onProgress(done, total) {
      if (!started) {
        bar.start(total, done);
        started = true;
      } else {
        bar.setTotal(total);
        bar.update(done);
      }
    },
    stop() {
      if (started) bar.stop();
    },
  };
}
