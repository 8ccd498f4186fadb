import { describe, expect, it } from 'vitest';
import { channelFds, runSandboxed, SandboxUnavailableError } from '../../tasks/sandbox.ts';
import { runSandboxedOffThread } from '../../tasks/sandbox-thread.ts';

describe('sandboxes started in the sandbox thread', () => {
  it('give what runSandboxed gives: output, exit code, result channels as Buffers, stdin as text or bytes', async () => {
    const [fd] = channelFds(1) as [number];
    const opts = (stdin: string | Buffer) => ({
      argv: [
        '/usr/bin/python3',
        '-c',
        `import os,sys; d=sys.stdin.read(); os.write(${fd}, d[::-1].encode()); print(d); sys.exit(3)`,
      ],
      stdin,
      channels: 1,
    });
    const [inThread, here, bytes] = await Promise.all([
      runSandboxedOffThread(opts('abc')),
      runSandboxed(opts('abc')),
      runSandboxedOffThread(opts(Buffer.from('xyz'))),
    ]);
    expect(inThread).toMatchObject({
      exitCode: 3,
      stdout: 'abc\n',
      timedOut: false,
      outputExceeded: false,
      channelExceeded: false,
    });
    expect({ ...inThread, wallMs: 0 }).toEqual({ ...here, wallMs: 0 });
    expect(Buffer.isBuffer(inThread.channels[0])).toBe(true);
    expect(inThread.channels[0]!.toString()).toBe('cba');
    expect(bytes.channels[0]!.toString()).toBe('zyx');
  });

  it('reject with the same errors: a broken bubblewrap is SandboxUnavailableError', async () => {
    const err = await runSandboxedOffThread({ argv: ['/usr/bin/true'], bwrapPath: '/bin/false' }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SandboxUnavailableError);
    expect((err as Error).message).toMatch(/could not set up the sandbox/);
  });
});
