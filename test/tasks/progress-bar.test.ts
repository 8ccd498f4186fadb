// A progress bar does not read "0s left" before its first update (cli-progress's estimate starts as '0').
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { progressBar, timeLeft } from '../../tasks/progress-bar.ts';

const options = { autopaddingChar: '0' };

describe('progress bars', () => {
  it('say the time left is being measured until an update gives a rate', () => {
    expect(timeLeft('0', options)).toBe('time left: measuring');
    expect(timeLeft('INF', options)).toBe('time left: measuring');
    expect(timeLeft('NULL', options)).toBe('time left: measuring');
    expect(timeLeft(75, options)).toBe('01m15s left');
    expect(timeLeft(15, options)).toBe('15s left');
  });

  it('draw `0/5 ... time left: measuring`, never `0s left`, before the first update', () => {
    const stream = Object.assign(new PassThrough(), { isTTY: true, columns: 200 });
    let out = '';
    stream.on('data', (d: Buffer) => (out += d.toString()));
    const bar = progressBar(stream, 'critic [{bar}] {value}/{total} | loss {loss} | {left}');
    bar.start(5, 0, { loss: '-' });
    expect(out).toContain('0/5 | loss - | time left: measuring');
    expect(out).not.toMatch(/\ds left/);
    bar.stop();
  });
});
