// The export's progress bar on a terminal (`sweetloop export`); nothing when the output is not a TTY.
import cliProgress from 'cli-progress';

/** A progress bar on a terminal (none when `stream` is not a TTY, e.g. in CI or a pipe). */
export function terminalProgress(
  stream: NodeJS.WriteStream,
  label: string,
): { onProgress?: (done: number, total: number) => void; stop: () => void } {
  if (!stream.isTTY) return { stop: () => {} };
  const bar = new cliProgress.SingleBar(
    {
      stream,
      format: `${label} [{bar}] {percentage}% | {value}/{total} sessions | {eta_formatted} left`,
      hideCursor: true,
      etaBuffer: 50,
    },
    cliProgress.Presets.shades_classic,
  );
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
