// The event-loop delay while backend sandboxes start, from the caller's thread (tasks/sandbox.ts runSandboxed)
// against the sandbox thread (tasks/sandbox-thread.ts), in a process holding a few hundred MB of heap as the bot
// does at 200 people (child_process.spawn forks synchronously, and a fork's cost grows with the process). Each
// round: 20 trivial Python sandboxes, two at a time (the default scoring pool), after an idle baseline.
// Usage: npx tsx bench/sandbox-loop.ts [--heap-objects 2000000 --rounds 2]
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { runSandboxed, type SandboxRunOptions, type SandboxRunResult } from '../tasks/sandbox.ts';
import { runSandboxedOffThread } from '../tasks/sandbox-thread.ts';

const { values } = parseArgs({
  options: { 'heap-objects': { type: 'string', default: '2000000' }, rounds: { type: 'string', default: '2' } },
});
const heap: unknown[] = [];
for (let i = 0; i < Number(values['heap-objects']); i++) heap.push({ a: i, b: `x${i}`, c: [i] });
const opts: SandboxRunOptions = { argv: ['/usr/bin/python3', '-S', '-c', 'print(1)'] };
const h = monitorEventLoopDelay({ resolution: 5 });
const tick = setInterval(() => {}, 1); // keeps the loop turning, so a stall shows as delay
const ms = (ns: number) => (ns / 1e6).toFixed(1);
const line = (label: string, extra: string) =>
  console.log(
    `${label.padEnd(15)} ${extra.padEnd(22)} loop delay p50 ${ms(h.percentile(50))} p99 ${ms(h.percentile(99))} max ${ms(h.max)} ms`,
  );

console.log(
  `rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB, load average ${(await import('node:os'))
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
h.enable();
await new Promise((r) => setTimeout(r, 2500));
h.disable();
line('idle 2.5 s', '');
const ways: [string, (o: SandboxRunOptions) => Promise<SandboxRunResult>][] = [
  ['main thread', runSandboxed],
  ['sandbox thread', runSandboxedOffThread],
];
for (let round = 0; round < Number(values.rounds); round++) {
  for (const [label, run] of ways) {
    await run(opts); // warm (the thread's first start, Python's page cache)
    h.reset();
    h.enable();
    const t0 = performance.now();
    for (let i = 0; i < 10; i++) await Promise.all([run(opts), run(opts)]);
    h.disable();
    line(label, `20 sandboxes ${(performance.now() - t0).toFixed(0)} ms`);
  }
}
clearInterval(tick);
heap.length = 0;
