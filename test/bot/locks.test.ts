// The keyed mutex: one piece of work per key at a time, in arrival order, and free again as soon as the work
// is done (the engine refuses a reply while a session's lock is held).
import { describe, expect, it } from 'vitest';
import { KeyedMutex } from '../../bot/locks.ts';

describe('KeyedMutex', () => {
  it('runs work on one key in arrival order, other keys alongside', async () => {
    const m = new KeyedMutex();
    const order: string[] = [];
    let open = () => {};
    const gate = new Promise<void>((resolve) => (open = resolve));
    const a = m.run('s', async () => {
      await gate;
      order.push('a');
    });
    const b = m.run('s', async () => void order.push('b'));
    await m.run('other', async () => void order.push('other'));
    expect(m.isBusy('s')).toBe(true);
    open();
    await Promise.all([a, b]);
    expect(order).toEqual(['other', 'a', 'b']);
  });

  it('is free as soon as the awaited work has finished, or failed', async () => {
    const m = new KeyedMutex();
    await m.run('s', async () => 1);
    expect(m.isBusy('s')).toBe(false);
    await expect(m.run('s', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(m.isBusy('s')).toBe(false);
  });
});
