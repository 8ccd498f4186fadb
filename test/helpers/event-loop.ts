// How long this thread's event loop was held up by work on this thread, told apart from how long the machine
// kept the thread waiting for a CPU. monitorEventLoopDelay (perf_hooks) measures how late timers fire; on a shared
// machine with more runnable threads than cores that lateness is mostly the wait for a CPU, which no code of ours
// causes. Linux's per-thread scheduler statistics (/proc/self/task/TID/schedstat: time on a CPU, time waiting for
// one) give the part that is this thread's own work: its CPU time in each tick of the loop.
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

export interface EventLoopReport {
  /** monitorEventLoopDelay's 99th percentile and maximum, ms: everything that made a 10 ms timer late. */
  delayP99Ms: number;
  delayMaxMs: number;
  /**
   * This thread's CPU time in each 10 ms tick (the tick's lateness where the kernel does not tell), 99th percentile
   * and maximum, ms: what work on this thread held the loop up.
   */
  busyP99Ms: number;
  busyMaxMs: number;
  /** Time this thread waited for a CPU while watched, ms (0 where the kernel does not tell). */
  runQueueWaitMs: number;
  ticks: number;
}

const TICK_MS = 10;

/** [time on a CPU, time waiting for one] of this thread so far, ns, or null where the kernel does not say. */
function schedstat(): [number, number] | null {
  try {
    const [onCpu, waiting] = readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ').map(Number);
    return Number.isFinite(onCpu) && Number.isFinite(waiting) ? [onCpu!, waiting!] : null;
  } catch {
    return null;
  }
}

function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(0.99 * sorted.length))] ?? 0;
}

/** Starts watching; stop() ends it and reports. Call it on the thread to watch (a test file's own thread). */
export function watchEventLoop(): { stop(): EventLoopReport } {
  const histogram = monitorEventLoopDelay({ resolution: TICK_MS });
  histogram.enable();
  const first = schedstat();
  const busy: number[] = [];
  let last = performance.now();
  let lastStat = first;
  const timer = setInterval(() => {
    const now = performance.now();
    const stat = schedstat();
    busy.push(stat && lastStat ? (stat[0] - lastStat[0]) / 1e6 : Math.max(0, now - last - TICK_MS));
    last = now;
    lastStat = stat;
  }, TICK_MS);
  return {
    stop() {
      clearInterval(timer);
      histogram.disable();
      const end = schedstat();
      return {
        delayP99Ms: histogram.percentile(99) / 1e6,
        delayMaxMs: histogram.max / 1e6,
        busyP99Ms: p99(busy),
        busyMaxMs: Math.max(0, ...busy),
        runQueueWaitMs: end && first ? (end[1] - first[1]) / 1e6 : 0,
        ticks: busy.length,
      };
    },
  };
}
