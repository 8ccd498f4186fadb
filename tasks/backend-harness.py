# The program tasks/backend-eval.ts runs inside the sandbox, once per task.
#
# Input (stdin, JSON): reference source, candidate source, test call expressions, per-test seconds, limits.
# Output: JSON lines on two descriptors given as argv[1] (reference) and argv[2] (candidate); stdout and
# stderr are sent to /dev/null so neither solution's prints can be mistaken for results or flood the host.
#
# Trust: the reference phase runs to the end, its results are written, and its descriptor is closed before
# a single line of candidate code exists in this process; the reference source, namespace and outputs are
# then dropped. Whatever the candidate does afterwards (patch builtins, write its own lines, exit, loop) can
# only change what is reported as the candidate's own outputs, which is no more than returning other values.
# Equality is decided by the host from the encoded values, never by a candidate-controlled __eq__.
import builtins
import gc
import json
import math
import os
import random
import reprlib
import signal
import sys

sys.set_int_max_str_digits(0) if hasattr(sys, 'set_int_max_str_digits') else None

# Started with -S: the site-packages directories without running their .pth files (start-up time, and no
# host-specific start-up code), so numpy and friends still import.
_ver = 'python%d.%d' % sys.version_info[:2]
for _d in ('/usr/local/lib/%s/dist-packages' % _ver, '/usr/lib/python3/dist-packages', '/usr/lib/%s/dist-packages' % _ver):
    if os.path.isdir(_d) and _d not in sys.path:
        sys.path.append(_d)

REF_FD = int(sys.argv[1])
CAND_FD = int(sys.argv[2])


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


def _emit(fd, record):
    data = (json.dumps(record, ensure_ascii=True, allow_nan=False) + '\n').encode('ascii')
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_input():
    buf = bytearray()
    while True:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            break
        buf += chunk
    os.close(0)
    data = json.loads(buf)
    buf[:] = bytes(len(buf))
    return data


class _Encoder:
    """Turns a returned value into plain JSON that keeps what Python's == looks at."""

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
        self._spend()
        if x is None:
            return None
        t = type(x)
        if t is bool or isinstance(x, bool):
            return bool(x)
        if isinstance(x, int):
            v = int.__int__(x)
            if -(2 ** 53) < v < 2 ** 53:
                return v
            s = str(v)
            self._spend(len(s))
            return ['int', s]
        if isinstance(x, float):
            v = float.__float__(x)
            if math.isfinite(v):
                return v
            return ['float', 'nan' if v != v else ('inf' if v > 0 else '-inf')]
        if isinstance(x, complex):
            return ['complex', self.enc(complex.real.__get__(x), depth + 1), self.enc(complex.imag.__get__(x), depth + 1)]
        if isinstance(x, str):
            s = str.__str__(x)
            self._spend(len(s))
            return s
        if isinstance(x, (bytes, bytearray)):
            b = bytes(x)
            self._spend(len(b) * 2)
            return ['bytes', b.hex()]
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
        r = repr(x)
        self._spend(len(r))
        return ['obj', module + '.' + getattr(t, '__qualname__', t.__name__), r]


_short = reprlib.Repr()
_short.maxstring = 120
_short.maxother = 120
_short.maxlist = _short.maxtuple = _short.maxdict = _short.maxset = _short.maxfrozenset = 12
_short.maxlevel = 4


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


def _run_phase(source, calls, fd, per_test, max_nodes, max_chars, label):
    ns = {'__name__': '__' + label + '__', '__builtins__': builtins}
    try:
        code = compile(source, '<' + label + '>', 'exec')
        _timed(per_test, lambda: exec(code, ns))
    except _Timeout:
        _emit(fd, {'exec_error': 'Timeout: defining the ' + label + ' took longer than the per-test limit'})
        return
    except BaseException as e:
        try:
            text = _timed(per_test, lambda: _describe(e))
        except BaseException:
            text = 'error'
        _emit(fd, {'exec_error': text})
        return
    for i, call in enumerate(calls):
        record = {'i': i}

        def one():
            random.seed(i)
            value = eval(compile(call, '<test ' + str(i + 1) + '>', 'eval'), ns)
            record['v'] = _Encoder(max_nodes, max_chars).enc(value)
            record['r'] = _short.repr(value)

        try:
            _timed(per_test, one)
        except _Timeout:
            record.pop('v', None)
            record.pop('r', None)
            record['err'] = 'Timeout: over %g s of CPU time or %g s in all' % (per_test, per_test * WALL_FACTOR)
        except BaseException as e:
            record.pop('v', None)
            record.pop('r', None)
            try:
                record['err'] = _timed(per_test, lambda: _describe(e))
            except BaseException:
                record['err'] = 'error'
        _emit(fd, record)
    ns.clear()


def main():
    task = _read_input()
    devnull = os.open('/dev/null', os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    calls = list(task['calls'])
    per_test = float(task['perTestSeconds'])
    max_nodes = int(task['maxNodes'])
    max_chars = int(task['maxChars'])

    _run_phase(task.pop('reference'), calls, REF_FD, per_test, max_nodes, max_chars, 'reference')
    _emit(REF_FD, {'done': True})
    os.close(REF_FD)
    candidate = task.pop('candidate')
    del task
    # Nothing the reference left behind should be reachable from candidate code.
    random.seed()
    gc.collect()
    _run_phase(candidate, calls, CAND_FD, per_test, max_nodes, max_chars, 'candidate')
    _emit(CAND_FD, {'done': True})


main()
