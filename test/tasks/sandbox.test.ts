import { describe, expect, it } from 'vitest';
import { assertSandboxAvailable, channelFds, runSandboxed, SandboxUnavailableError, seccompProgram } from '../../tasks/sandbox.ts';

const py = (src: string, extra: Partial<Parameters<typeof runSandboxed>[0]> = {}) => runSandboxed({ argv: ['/usr/bin/python3', '-c', src], ...extra });

describe('bubblewrap sandbox', () => {
  it('comes up, and reports a missing or broken bubblewrap as SandboxUnavailableError', async () => {
    await assertSandboxAvailable();
    await expect(assertSandboxAvailable('/nonexistent/bwrap')).rejects.toThrow(SandboxUnavailableError);
    await expect(runSandboxed({ argv: ['/usr/bin/true'], bwrapPath: '/bin/false' })).rejects.toThrow(/could not set up the sandbox/);
    await expect(assertSandboxAvailable('/usr/bin/bwrap', '/opt/python/bin/python3')).rejects.toThrow(/must live under \/usr/);
  });

  it('shows only /usr, a private /tmp and /sandbox, a read-only root, no network, no processes', async () => {
    const r = await py(`
import os, socket, json
out = {'root': sorted(os.listdir('/')), 'etc': sorted(os.listdir('/etc')), 'cwd': os.getcwd(), 'pid': os.getpid(), 'env': sorted(os.environ)}
try:
    os.fork(); out['fork'] = 'forked'
except OSError as e:
    out['fork'] = e.errno
try:
    open('/usr/x', 'w')
except OSError as e:
    out['usr'] = e.errno
open('/tmp/ok', 'w').write('x')
out['ifaces'] = [n for _, n in socket.if_nameindex()]
print(json.dumps(out))
`, { env: { EXTRA: '1' } });
    const out = JSON.parse(r.stdout);
    expect(out.root).toEqual(['bin', 'dev', 'etc', 'lib', 'lib64', 'sandbox', 'tmp', 'usr']);
    // Only what the loader and timezone code need (each is bound if the host has it).
    for (const f of out.etc) expect(['alternatives', 'ld.so.cache', 'localtime']).toContain(f);
    expect(out).toMatchObject({ cwd: '/sandbox', pid: 1, fork: 1, usr: 30 });
    // bubblewrap adds PWD and Python's UTF-8 locale coercion may add LC_CTYPE; nothing comes from the host.
    expect(out.env.filter((k: string) => k !== 'LC_CTYPE' && k !== 'PWD')).toEqual(['EXTRA', 'HOME', 'LANG', 'PATH']);
    expect(out.ifaces).toEqual(['lo']);
  });

  it('allows threads but refuses new processes (seccomp), and applies the rlimits', async () => {
    const r = await py(`
import threading, resource, subprocess
t = threading.Thread(target=lambda: print('thread'))
t.start(); t.join()
try:
    subprocess.run(['/bin/true'])
except OSError as e:
    print('subprocess', e.errno)
print(resource.getrlimit(resource.RLIMIT_CPU), resource.getrlimit(resource.RLIMIT_AS), resource.getrlimit(resource.RLIMIT_FSIZE))
`, { limits: { cpuSeconds: 7, memoryBytes: 512 << 20, fileSizeBytes: 1 << 20 } });
    expect(r.stdout.split('\n')).toEqual(['thread', 'subprocess 1', `(7, 8) (${512 << 20}, ${512 << 20}) (${1 << 20}, ${1 << 20})`, '']);
    expect(seccompProgram().length % 8).toBe(0);
    expect(() => seccompProgram('ia32')).toThrow(SandboxUnavailableError);
  });

  it('passes result channels, and kills at the output cap, the CPU limit and the wall-clock deadline', async () => {
    const [a, b] = channelFds(2);
    const ch = await py(`import os\nos.write(${a}, b'first')\nos.write(${b}, b'second')`, { channels: 2 });
    expect(ch.channels.map((c) => c.toString())).toEqual(['first', 'second']);
    const flood = await py('import os\nwhile True: os.write(1, b"x" * 65536)', { limits: { outputBytes: 100_000 } });
    expect(flood).toMatchObject({ outputExceeded: true, timedOut: false });
    expect(flood.stdout.length).toBe(100_000);
    const cpu = await py('while True: pass', { limits: { cpuSeconds: 1, wallMs: 90_000 } });
    expect(cpu.timedOut).toBe(false);
    expect(cpu.exitCode).toBe(137);
    const wall = await py('import time\ntime.sleep(60)', { limits: { wallMs: 500 } });
    expect(wall.timedOut).toBe(true);
    expect(wall.wallMs).toBeLessThan(20_000);
    const big = await py("open('/tmp/big', 'wb').write(b'x' * (4 << 20))", { limits: { fileSizeBytes: 1 << 20 } });
    expect(big.exitCode).not.toBe(0);
  });
});
