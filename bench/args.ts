// The benchmarks' one rule for a whole-number flag (`--people 200`): absent gives the default, anything but a
// positive integer stops the run with the flag's name.
export function countArg(name: string, fallback: number, argv: readonly string[] = process.argv): number {
  const i = argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(argv[i + 1]);
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name}: expected a positive integer`);
  return v;
}
