import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { BackendTask } from '../../tasks/model.ts';
import { evaluateBackend, evaluateBackendBatch } from '../../tasks/backend-eval.ts';
import { SandboxUnavailableError } from '../../tasks/sandbox.ts';
import { BACKEND_SAMPLE, functionName, haveSample, loadBackendSample } from '../helpers/colbench-sample.ts';

const add: BackendTask = {
  kind: 'backend',
  description: 'Add two things. The signature of the function is: def add(a, b)',
  reference: 'def add(a, b):\n    return a + b\n',
  testCases: ['add(1, 2)', 'add(-1, 1.5)', "add('a', 'b')"],
};

describe('backend evaluator on our own tasks', () => {
  it('scores the reference 1.0, with per-test detail', async () => {
    const r = await evaluateBackend(add, add.reference);
    expect(r).toMatchObject({ passed: 3, total: 3, score: 1, success: true });
    expect(r.error).toBeUndefined();
    expect(r.tests.map((t) => t.expected)).toEqual(['3', '0.5', "'ab'"]);
    expect(r.tests.every((t) => t.actual === t.expected)).toBe(true);
  });

  it('strips markdown fences and compares across numeric types as Python does', async () => {
    const r = await evaluateBackend(
      add,
      'Here you go:\n```python\ndef add(a, b):\n    s = a + b\n    return float(s) if not isinstance(s, str) else s\n```\n',
    );
    expect(r.score).toBe(1);
  });

  it('scores a wrong answer below 1 and says why each test failed', async () => {
    const r = await evaluateBackend(add, 'def add(a, b):\n    return a - b if not isinstance(a, str) else b + a\n');
    expect(r.passed).toBe(0);
    expect(r.tests[0]).toMatchObject({ expected: '3', actual: '-1', passed: false });
    const syntax = await evaluateBackend(add, 'def add(a, b)\n    return a + b\n');
    expect(syntax.score).toBe(0);
    expect(syntax.error).toMatch(/^candidate: SyntaxError/);
  });

  it('never passes a test whose reference returns None, as ColBench', async () => {
    const task: BackendTask = {
      ...add,
      reference: 'def add(a, b):\n    if a == 1:\n        return None\n    return a + b\n',
    };
    const r = await evaluateBackend(task, task.reference);
    expect(r.passed).toBe(2);
    expect(r.tests[0]!.error).toMatch(/reference returned None/);
  });

  it('says so when the task itself is broken', async () => {
    const broken: BackendTask = { ...add, reference: 'def add(a, b):\n    return a +\n' };
    const r = await evaluateBackend(broken, add.reference);
    expect(r.score).toBe(0);
    expect(r.error).toMatch(/^the task's reference does not load: SyntaxError/);
  });

  it('keeps scoring after a test that times out', async () => {
    const r = await evaluateBackend(add, 'def add(a, b):\n    while a == 1:\n        pass\n    return a + b\n', {
      perTestTimeoutMs: 300,
    });
    expect(r.passed).toBe(2);
    expect(r.tests[0]!.error).toMatch(/Timeout/);
  });

  it('is not fooled by an object that claims to equal everything', async () => {
    const r = await evaluateBackend(
      add,
      'class Yes:\n    def __eq__(self, other): return True\n    def __ne__(self, other): return False\n    __hash__ = object.__hash__\n' +
        'def add(a, b):\n    return Yes()\n',
    );
    expect(r.score).toBe(0);
  });

  it('refuses clearly, and runs nothing, without a working bubblewrap', async () => {
    const marker = join(tmpdir(), `sweetloop-unsandboxed-${process.pid}`);
    const answer = `open(${JSON.stringify(marker)}, 'w').write('ran')\ndef add(a, b):\n    return a + b\n`;
    await expect(evaluateBackend(add, answer, { bwrapPath: '/nonexistent/bwrap' })).rejects.toThrow(
      SandboxUnavailableError,
    );
    await expect(evaluateBackend(add, answer, { bwrapPath: '/nonexistent/bwrap' })).rejects.toThrow(
      /bubblewrap is not available at \/nonexistent\/bwrap/,
    );
    // An executable that is not bubblewrap: the probe sees no sandbox come up.
    await expect(evaluateBackend(add, answer, { bwrapPath: '/bin/false' })).rejects.toThrow(
      /could not set up the sandbox|probe failed/,
    );
    expect(existsSync(marker)).toBe(false);
  });
});

describe('hostile answers score 0 and leave the host untouched', () => {
  let hostDir: string;
  let tcp: Server;
  let unix: Server;
  let tcpPort = 0;
  let connections = 0;
  const repoFile = resolve(import.meta.dirname, `../../pwned-${process.pid}`);

  beforeAll(async () => {
    hostDir = mkdtempSync(join(tmpdir(), 'sweetloop-host-'));
    writeFileSync(join(hostDir, 'secret.txt'), 'TOP-SECRET-HOST-DATA');
    const count = () => {
      connections++;
    };
    tcp = createServer((s) => {
      count();
      s.destroy();
    });
    unix = createServer((s) => {
      count();
      s.destroy();
    });
    await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
    await new Promise<void>((r) => unix.listen(join(hostDir, 'host.sock'), r));
    tcpPort = (tcp.address() as { port: number }).port;
  });

  afterAll(async () => {
    await new Promise((r) => tcp.close(r));
    await new Promise((r) => unix.close(r));
    rmSync(hostDir, { recursive: true, force: true });
  });

  // Each hostile body runs when `add` is called (and some at definition time); returning the stolen data or
  // the error it met makes what it saw visible in the test detail.
  const hostile = (): Record<string, string> => {
    const secret = join(hostDir, 'secret.txt');
    const fn = (body: string) =>
      `import os, sys, socket, json, time\ndef add(*args, **kwargs):\n${body.replace(/^/gm, '    ')}\n`;
    return {
      'fork bomb': fn('while True:\n    try:\n        os.fork()\n    except OSError:\n        pass'),
      'fork bomb at import': 'import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n',
      'subprocess shell fork bomb': fn(
        "import subprocess\nreturn subprocess.run(['/bin/sh', '-c', ':(){ :|:& };:']).returncode",
      ),
      'while True': fn('while True:\n    pass'),
      'loop that swallows the timeout': fn(
        'while True:\n    try:\n        time.sleep(100)\n    except BaseException:\n        pass',
      ),
      'memory bomb': fn("x = []\nwhile True:\n    x.append(' ' * 10**7)"),
      'one huge allocation': fn('return len(bytearray(1 << 40))'),
      'read host files': fn(
        `out = []\nfor p in ['/etc/shadow', '/etc/passwd', '/root', ${JSON.stringify(secret)}, '/proc/1/environ']:\n    try:\n        out.append(open(p).read())\n    except Exception as e:\n        out.append(type(e).__name__)\nreturn out`,
      ),
      'list host dirs': fn(
        "return [os.listdir(p) if os.path.isdir(p) else None for p in ['/', '/root', '/home', '/work', '/etc']]",
      ),
      'open sockets': fn(
        `out = []\nfor fam, addr in [(socket.AF_INET, ('127.0.0.1', ${tcpPort})), (socket.AF_UNIX, ${JSON.stringify(join(hostDir, 'host.sock'))}), (socket.AF_INET, ('1.1.1.1', 53))]:\n    try:\n        s = socket.socket(fam, socket.SOCK_STREAM)\n        s.settimeout(1)\n        s.connect(addr)\n        s.sendall(b'hello')\n        out.append('connected')\n    except Exception as e:\n        out.append(type(e).__name__)\nreturn out`,
      ),
      'write outside tmp': fn(
        `out = []\nfor p in [${JSON.stringify(join(hostDir, 'pwned'))}, ${JSON.stringify(repoFile)}, '/usr/pwned', '/pwned', '/etc/pwned', '/tmp/sweetloop-pwned-${process.pid}']:\n    try:\n        open(p, 'w').write('pwned')\n        out.append('wrote ' + p)\n    except Exception as e:\n        out.append(type(e).__name__)\nreturn out`,
      ),
      'fill the disk': fn("i = 0\nwhile True:\n    open('/tmp/f%d' % i, 'wb').write(b'x' * (1 << 20))\n    i += 1"),
      'huge output': fn("while True:\n    print('x' * 100000)\n    os.write(2, b'y' * 100000)"),
      'os._exit': fn('os._exit(0)'),
      'os._exit at import': 'import os\nos._exit(3)\n',
      'kill the parent': fn(
        `import signal\nout = []\nfor pid in [os.getppid(), 0, -1, ${process.pid}, 1]:\n    try:\n        os.kill(pid, signal.SIGKILL)\n        out.append('sent')\n    except Exception as e:\n        out.append(type(e).__name__)\nreturn out`,
      ),
      'spoof results on stdout and every descriptor': fn(
        "fake = json.dumps({'i': 0, 'v': 'spoof', 'r': 'spoof'}) + '\\n' + json.dumps({'done': True}) + '\\n'\n" +
          "print(json.dumps({'results': [{'passed': 3, 'total': 3, 'score': 1}]}))\n" +
          "for fd in range(0, 64):\n    for i in range(3):\n        try:\n            os.write(fd, json.dumps({'i': i, 'v': 'spoof', 'r': 'spoof'}).encode() + b'\\n')\n        except OSError:\n            pass\nreturn 'spoof'",
      ),
      'steal the reference from memory': fn(
        "import gc\nfor o in gc.get_objects():\n    vals = o.values() if isinstance(o, dict) else (o if isinstance(o, (list, tuple)) else [])\n    for v in list(vals):\n        if isinstance(v, str) and 'def add(a, b)' in v and 'steal' not in v:\n            ns = {}\n            exec(v, ns)\n            return ns['add'](*args)\n        if callable(v) and getattr(v, '__name__', '') == 'add' and getattr(getattr(v, '__code__', None), 'co_filename', '') == '<reference>':\n            return v(*args)\ntry:\n    return ctypes_steal()\nexcept Exception as e:\n    return type(e).__name__",
      ),
      'threads that outlive their test': fn(
        'import threading\nfor _ in range(10000):\n    threading.Thread(target=lambda: [0 for _ in iter(int, 1)], daemon=True).start()',
      ),
      'load ctypes': fn("import ctypes\nreturn 'ctypes loaded'"),
    };
  };

  it('every hostile answer scores 0', async () => {
    // Marks our sandboxes in `ps`, apart from those of other test files running at the same time.
    const label = `hostile-${process.pid}-${Date.now()}`;
    const answers = hostile();
    const names = Object.keys(answers);
    const results = await evaluateBackendBatch(
      names.map((n) => ({ task: add, answer: answers[n]! })),
      { perTestTimeoutMs: 300, timeoutMs: 4_000, concurrency: 2, label },
    );
    const byName = Object.fromEntries(names.map((n, i) => [n, results[i]!]));
    for (const [name, r] of Object.entries(byName)) {
      expect.soft(r.score, `${name}: ${JSON.stringify(r.tests)}`).toBe(0);
      expect.soft(r.passed, name).toBe(0);
    }
    // What the hostile code saw, from its own return values.
    const seen = (n: string) => byName[n]!.tests[0]!.actual ?? '';
    expect(seen('read host files')).not.toMatch(/TOP-SECRET|root:/);
    expect(seen('read host files')).toMatch(/FileNotFoundError/);
    expect(seen('list host dirs')).not.toMatch(/'root'|'home'|'work'/);
    expect(seen('open sockets')).not.toMatch(/connected/);
    // Only the private /tmp takes the write; the host's /tmp never sees it (checked below).
    expect(seen('write outside tmp')).not.toMatch(/wrote (?!\/tmp\/)/);
    expect(seen('kill the parent')).toMatch(/ProcessLookupError/);
    expect(seen('steal the reference from memory')).toMatch(/ImportError|NameError/);
    expect(byName['load ctypes']!.tests[0]!.error).toMatch(/ImportError|ModuleNotFoundError/);
    expect(byName['huge output']!.tests[0]!.error).toMatch(/Timeout/);
    expect(byName['fork bomb at import']!.error).toMatch(/candidate: Timeout/);
    expect(byName['os._exit at import']!.error).toMatch(/ended early/);
    // The host: nothing written, nothing connected, this process alive, nothing left running.
    expect(existsSync(join(hostDir, 'pwned'))).toBe(false);
    expect(existsSync(repoFile)).toBe(false);
    expect(existsSync(`/tmp/sweetloop-pwned-${process.pid}`)).toBe(false);
    expect(connections).toBe(0);
    let leftovers = '';
    for (let i = 0; i < 20; i++) {
      leftovers = execFileSync('ps', ['-eo', 'pid,args', 'ww'], { encoding: 'utf8' })
        .split('\n')
        .filter((l) => l.includes(label))
        .join('\n');
      if (!leftovers) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(leftovers).toBe('');
  });
});

// A reader of the process's own memory by raw address, through whichever module imports: cffi's backend, ctypes,
// or numpy's array interface. The kernel copies each page into a pipe, so an unmapped one is an error, not a crash.
const RAW_MEMORY = `
import os, re, sys
def _reader():
    r, w = os.pipe()
    try:
        import _cffi_backend as B
        charp = B.new_pointer_type(B.new_primitive_type('char'))
        route, view = 'cffi', lambda addr, n: B.buffer(B.cast(charp, addr), n)
    except ImportError:
        try:
            import ctypes
            route, view = 'ctypes', lambda addr, n: (ctypes.c_char * n).from_address(addr)
        except ImportError:
            try:
                import numpy
            except ImportError:
                return 'none', None
            class At:
                pass
            def view(addr, n):
                a = At()
                a.__array_interface__ = {'data': (addr, True), 'shape': (n,), 'typestr': '|u1', 'version': 3}
                return memoryview(numpy.asarray(a))
            route = 'numpy'
    def read(addr, n):
        try:
            os.write(w, view(addr, n))
        except (OSError, ValueError, OverflowError):
            return None
        return os.read(r, n)
    return route, read

def _scan(pattern):
    route, read = _reader()
    found = []
    if read:
        page, seen = 1 << 16, set()
        for anchor in (id(sys), id(b'y' * 5000)):
            for step in range(-4096, 4096):
                addr = (anchor & ~(page - 1)) + step * page
                if addr > 0 and addr not in seen:
                    seen.add(addr)
                    block = read(addr, page)
                    found += re.findall(pattern, block or b'')
    return route, found
`;

describe('answers that try to forge a score score 0, and the stored detail is what was compared', () => {
  // Its reference leaves its output in freed memory of the process it ran in; the formula is not guessable.
  const vault: BackendTask = {
    kind: 'backend',
    description: 'Open the vault. The signature of the function is: def vault(n)',
    reference: "def vault(n):\n    return ('VAULT<%d>=%d;' % (n, n * 7919 % 1009)) * 64\n",
    testCases: ['vault(123)'],
  };
  // Scanning takes a second or so of CPU time, counted against loading the answer: room for a busy machine.
  const slow = { perTestTimeoutMs: 10_000 };
  // The answer scans memory when it loads, before its own allocations reuse what the reference freed.
  const stolen = `${RAW_MEMORY}
ROUTE, FOUND = _scan(rb'VAULT<123>=[0-9]+;')
_, SELF = _scan(rb'vault[(]123[)]')
STOLEN = FOUND[0].decode() * 64 if FOUND else None
`;

  it('a memory-reading answer finds no reference in its process (and cannot import ctypes or cffi)', async () => {
    const r = await evaluateBackend(
      vault,
      `${stolen}\ndef vault(n):\n    return STOLEN or ('nothing found', ROUTE, len(SELF) > 0)\n`,
      slow,
    );
    expect(r.score).toBe(0);
    const [what, route, sawItself] = /^\('(.*)', '(\w+)', (True|False)\)$/.exec(r.tests[0]!.actual ?? '')?.slice(1) ?? [
      JSON.stringify(r),
    ];
    expect(what).toBe('nothing found');
    expect(['numpy', 'none']).toContain(route);
    // Where numpy gives raw memory, the reader works: it finds the test call in its own process.
    if (route === 'numpy') expect(sawItself).toBe('True');
  });

  it('an encoder-patching answer (its harness told to report another value) scores 0 and shows what was compared', async () => {
    const answer = `${stolen}
enc = sys.modules['__main__']._Encoder.enc
sys.modules['__main__']._Encoder.enc = lambda self, x, depth=0: enc(self, STOLEN if x == 'wrong' and STOLEN else x, depth)
def vault(n):
    return 'wrong'
`;
    const r = await evaluateBackend(vault, answer, slow);
    expect(r.score).toBe(0);
    expect(r.tests[0]).toMatchObject({ actual: "'wrong'", passed: false });
  });

  it('malformed result lines fail their test, not the evaluation', async () => {
    const task: BackendTask = { ...add, testCases: ['add(1, 2)', 'add(2, 3)', 'add(3, 4)', 'add(4, 5)', 'add(5, 6)'] };
    const deep = '["list", '.repeat(100_000) + '1' + ']'.repeat(100_000);
    const lines = [
      '{"i": 0, "v": ["int", "12x"]}',
      `{"i": 1, "v": ${deep}}`,
      '{"i": 2, "v": ["set", 3, 3]}',
      '{"i": 3, "v": ["frob"]}',
      'not json at all',
      '{"i": "x", "v": 9}',
      '[1, 2, 3]',
    ];
    const answer =
      `import os\nfor fd in range(3, 32):\n    try:\n        os.write(fd, ${JSON.stringify(lines.join('\n') + '\n')}.encode())\n    except OSError:\n        pass\n` +
      'def add(a, b):\n    return a + b\n';
    const r = await evaluateBackend(task, answer);
    expect(r.tests.map((t) => t.passed)).toEqual([false, false, false, false, true]);
    expect(r.tests.slice(0, 4).map((t) => t.error)).toEqual([
      'malformed result: bad int 12x',
      'malformed result: nested too deeply',
      'malformed result: a set with equal members',
      'malformed result: unknown tag',
    ]);
    expect(r.tests.slice(0, 4).every((t) => t.actual === null)).toBe(true);
    expect(r.score).toBe(0.2);
  });
});

describe.skipIf(!haveSample(BACKEND_SAMPLE))('backend evaluator on the ColBench sample', () => {
  const tasks = existsSync(BACKEND_SAMPLE) ? loadBackendSample() : [];

  it('scores every reference 1.0, except tests where the reference returns None', async () => {
    const results = await evaluateBackendBatch(tasks.map((task) => ({ task, answer: task.reference })));
    results.forEach((r, i) => {
      const noneTests = r.tests.filter((t) => t.error?.includes('reference returned None')).length;
      expect.soft(r.passed, `task ${i}: ${JSON.stringify(r.tests.filter((t) => !t.passed))}`).toBe(r.total - noneTests);
      expect.soft(r.error, `task ${i}`).toBeUndefined();
    });
  });

  it('scores mutated references below 1', async () => {
    // The candidate calls the reference and perturbs what it returns, so every test with a comparable value
    // should fail; a few tasks also get an operator flipped in the source.
    const mutate = (task: BackendTask): string => {
      const name = functionName(task);
      return (
        task.reference.replace(new RegExp(`def\\s+${name}\\s*\\(`), `def _original_${name}(`) +
        `\n\ndef _perturb(v):\n    if isinstance(v, bool):\n        return not v\n    if isinstance(v, (int, float)):\n        return v + 1\n    if isinstance(v, str):\n        return v + '!'\n    if isinstance(v, (list, tuple)):\n        return type(v)(list(v) + [None])\n    if isinstance(v, dict):\n        return {**v, '__extra__': 1}\n    return [v]\n\n` +
        `def ${name}(*args, **kwargs):\n    return _perturb(_original_${name}(*args, **kwargs))\n`
      );
    };
    const results = await evaluateBackendBatch(tasks.map((task) => ({ task, answer: mutate(task) })));
    // A test call that wraps the function (e.g. `print(f(x)) == 10.0`, always False) cannot tell answers apart;
    // tasks made only of such calls are exempt.
    const direct = (task: BackendTask) => task.testCases.some((c) => c.trim().startsWith(`${functionName(task)}(`));
    results.forEach((r, i) => {
      if (direct(tasks[i]!)) expect.soft(r.score, `task ${i}: ${JSON.stringify(r.tests.slice(0, 2))}`).toBeLessThan(1);
    });
    expect(tasks.filter(direct).length).toBeGreaterThan(tasks.length * 0.9);
    expect(results.filter((r) => r.score === 0).length).toBeGreaterThan(tasks.length * 0.9);
  });
});
