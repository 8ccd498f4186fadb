# The program tasks/backend-eval.ts runs inside the sandbox: ONE solution (a task's reference, or a candidate
# answer, never both in one process) on the test calls.
#
# Input (stdin, JSON): the solution's source, the test call expressions, per-test seconds, encoding limits.
# Output: JSON lines on the descriptor given as argv[1] (tasks/backend-results.ts reads them); stdout and stderr
# are sent to /dev/null so the solution's prints can neither be mistaken for results nor flood the host.
#
# Trust: nothing here is secret from the solution it runs, and nothing it writes is believed beyond its own
# outputs. A candidate may patch this harness, write its own lines or exit early: that only changes what it
# reports as its own outputs, no more than returning other values would. The reference runs in another sandbox,
# and equality is decided by the host from the encoded values (tasks/python-value.ts), never by __eq__ here.
import builtins
import json
import math
import os
import random
import signal
import sys

sys.set_int_max_str_digits(0) if hasattr(sys, 'set_int_max_str_digits') else None

# Started with -S: the site-packages directories without running their .pth files (start-up time, and no
# host-specific start-up code), so numpy and friends still import.
_ver = 'python%d.%d' % sys.version_info[:2]
for _d in ('/usr/local/lib/%s/dist-packages' % _ver, '/usr/lib/python3/dist-packages', '/usr/lib/%s/dist-packages' % _ver):
    if os.path.isdir(_d) and _d not in sys.path:
        sys.path.append(_d)

OUT_FD = int(sys.argv[1])
ROLE = sys.argv[2]  # 'reference' or 'candidate': the solution's module name, so its classes keep apart


class _Timeout(BaseException):
    pass


class _TooLarge(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Timeout()


signal.signal(signal.SIGALRM, _on_alarm)
signal.signal(signal.SIGPROF, _on_alarm)

# A test's limit is CPU time (so a busy machine does not fail honest code), with a wall-clock backstop of
# WALL_FACTOR times as much for code that waits instead of computing.
WALL_FACTOR = 5


def _emit(record):
    data = (json.dumps(record, ensure_ascii=True, allow_nan=False) + '\n').encode('ascii')
    view = memoryview(data)
    while view:
        n = os.write(OUT_FD, view)
        view = view[n:]


def _read_input():
    buf = bytearray()
    while True:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            break
        buf += chunk
    os.close(0)
    return json.loads(buf)


class _Encoder:
    """Turns a returned value into the wire format of tasks/python-value.ts: plain JSON that keeps what == sees."""

    def __init__(self, max_nodes, max_chars):
        self.nodes = max_nodes
        self.chars = max_chars

    def _spend(self, chars=0):
        self.nodes -= 1
        self.chars -= chars
        if self.nodes < 0 or self.chars < 0:
            raise _TooLarge('output too large to compare')

    def enc(self, x, depth=0):
        if depth > 200:
            raise _TooLarge('output nested too deeply to compare')
        if x is None:
            self._spend()
            return None
        t = type(x)
        if t is bool or isinstance(x, bool):
            self._spend()
            return bool(x)
        if isinstance(x, int):
            v = int.__int__(x)
            if -(2 ** 53) < v < 2 ** 53:
                self._spend()
                return v
            s = str(v)
            self._spend(len(s))
            return ['int', s]
        if isinstance(x, float):
            self._spend()
            return ['float', float.__repr__(float.__float__(x))]
        if isinstance(x, complex):
            self._spend()
            return ['complex', self.enc(complex.real.__get__(x), depth + 1), self.enc(complex.imag.__get__(x), depth + 1)]
        if isinstance(x, str):
            s = str.__str__(x)
            self._spend(len(s))
            return s
        if isinstance(x, (bytes, bytearray)):
            b = bytes(x)
            self._spend(len(b) * 2)
            return ['bytes', b.hex()]
        self._spend()
        if isinstance(x, list):
            return ['list'] + [self.enc(e, depth + 1) for e in list.__iter__(x)]
        if isinstance(x, tuple):
            return ['tuple'] + [self.enc(e, depth + 1) for e in tuple.__iter__(x)]
        if isinstance(x, dict):
            return ['dict'] + [[self.enc(k, depth + 1), self.enc(v, depth + 1)] for k, v in dict.items(x)]
        if isinstance(x, (set, frozenset)):
            it = set.__iter__(x) if isinstance(x, set) else frozenset.__iter__(x)
            return ['set'] + [self.enc(e, depth + 1) for e in it]
        module = getattr(t, '__module__', '') or ''
        # numpy scalars compare with Python numbers by value: 3 == numpy.int64(3).
        if module == 'numpy' and getattr(x, 'shape', None) == () and hasattr(x, 'item'):
            return self.enc(x.item(), depth + 1)
        r = str.__str__(repr(x))
        self._spend(len(r))
        return ['obj', module + '.' + getattr(t, '__qualname__', t.__name__), r]


def _describe(e):
    try:
        msg = str(e)
    except BaseException:
        msg = ''
    name = type(e).__name__ if isinstance(type(e).__name__, str) else 'Exception'
    text = name + (': ' + msg if msg else '')
    return text[:300]


def _timed(seconds, fn):
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, seconds * WALL_FACTOR)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)


def _run(source, calls, per_test, max_nodes, max_chars):
    ns = {'__name__': '__' + ROLE + '__', '__builtins__': builtins}
    try:
        code = compile(source, '<' + ROLE + '>', 'exec')
        _timed(per_test, lambda: exec(code, ns))
    except _Timeout:
        _emit({'exec_error': 'Timeout: defining the ' + ROLE + ' took longer than the per-test limit'})
        return
    except BaseException as e:
        try:
            text = _timed(per_test, lambda: _describe(e))
        except BaseException:
            text = 'error'
        _emit({'exec_error': text})
        return
    for i, call in enumerate(calls):
        record = {'i': i}

        def one():
            random.seed(i)
            value = eval(compile(call, '<test ' + str(i + 1) + '>', 'eval'), ns)
            record['v'] = _Encoder(max_nodes, max_chars).enc(value)

        try:
            _timed(per_test, one)
        except _Timeout:
            record.pop('v', None)
            record['err'] = 'Timeout: over %g s of CPU time or %g s in all' % (per_test, per_test * WALL_FACTOR)
        except BaseException as e:
            record.pop('v', None)
            try:
                record['err'] = _timed(per_test, lambda: _describe(e))
            except BaseException:
                record['err'] = 'error'
        _emit(record)


def main():
    task = _read_input()
    devnull = os.open('/dev/null', os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    _run(task['source'], list(task['calls']), float(task['perTestSeconds']), int(task['maxNodes']), int(task['maxChars']))
    _emit({'done': True})


main()
