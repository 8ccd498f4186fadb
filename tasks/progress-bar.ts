// The progress bars of long commands (a training run's phases, the starter's build, an export), on a terminal.
// cli-progress's own estimate reads "0s left" until its first update (its ETA starts as the string '0'), which
// tells a person the work is done when it has not begun: `{left}` says the time left is not known yet instead.
import cliProgress from 'cli-progress';

/** What `{left}` reads before an update has given a rate, and after one has (cli-progress's ETA, in seconds). */
export function timeLeft(eta: unknown, options: cliProgress.Options): string {
  return typeof eta === 'number' && Number.isFinite(eta)
    ? `${cliProgress.Format.TimeFormat(eta, options, 5)} left`
    : 'time left: measuring';
}

/** A bar on `stream` drawn from `template`, whose `{left}` is timeLeft; cli-progress's other tokens as usual. */
export function progressBar(stream: NodeJS.WritableStream, template: string): cliProgress.SingleBar {
  return new cliProgress.SingleBar(
    {
      stream,
      hideCursor: true,
      etaBuffer: 50,
      format: (options, params, payload) =>
        cliProgress.Format.Formatter(
          { ...options, format: template.replace('{left}', timeLeft(params.eta, options)) },
          params,
          payload,
        ),
    },
    cliProgress.Presets.shades_classic,
  );
}
