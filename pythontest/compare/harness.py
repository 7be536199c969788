"""Drive the real Python daemon and coordinated with the same calls.

Python 2.7 (the legacy client). Replies are turned into typed trees
(byte vs text strings, tuples vs lists, ints vs floats kept apart;
timestamps as offsets from the time of the call) and compared; the
differences we keep on purpose are listed, with their reasons, in ONE
table in docs/compat.md ("Differences the comparison suite allows"),
which this module reads.
"""
from __future__ import absolute_import, print_function

import os
import re
import time

from coordinate.job_client import TaskMaster

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
COMPAT_MD = os.path.join(REPO_ROOT, 'docs', 'compat.md')
TABLE_START = '<!-- compare-table:start -->'
TABLE_END = '<!-- compare-table:end -->'

# Floats in this range are Unix times; they are compared as offsets from
# the moment of the call, with this tolerance in seconds.
TIME_MIN, TIME_MAX = 1e9, 1e10
TIME_TOLERANCE = 3.0
# A server-made continuous key is str(time.time()) in Python and
# "<seconds>.<millis>" here: compared as a time too.
TIME_STRING = re.compile(r'^1\d{9}\.\d+$')
ERROR_KIND = re.compile(r'^([A-Za-z_][A-Za-z0-9_]*)\(')


def allowed_differences():
    """The table of docs/compat.md: {case id: (Py, we, why)}."""
    with open(COMPAT_MD) as f:
        text = f.read()
    if TABLE_START not in text or TABLE_END not in text:
        raise AssertionError('docs/compat.md lacks the markers %s ... %s '
                             'around the comparison table'
                             % (TABLE_START, TABLE_END))
    body = text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0]
    rows = {}
    for line in body.splitlines():
        line = line.strip()
        if not line.startswith('|') or line.startswith('|---'):
            continue
        cells = [c.strip() for c in line.strip('|').split('|')]
        if cells[0] in ('case', ''):
            continue
        if len(cells) != 4 or not all(cells):
            raise AssertionError('compat.md comparison row needs 4 non-empty '
                                 'cells (case, Py, we, why): %r' % line)
        case = cells[0].strip('`')
        if case in rows:
            raise AssertionError('compat.md lists case %r twice' % case)
        rows[case] = tuple(cells[1:])
    return rows


def typed(value, now):
    """A comparable tree of value that keeps its wire types apart."""
    if value is None:
        return ('null',)
    if isinstance(value, bool):
        return ('bool', value)
    if isinstance(value, (int, long)):
        return ('int', value)
    if isinstance(value, float):
        if TIME_MIN < value < TIME_MAX:
            return ('time', value - now)
        return ('float', value)
    if isinstance(value, str):
        return _typed_string('bytes', value, now)
    if isinstance(value, unicode):
        return _typed_string('text', value, now)
    if isinstance(value, tuple):
        return ('tuple', [typed(v, now) for v in value])
    if isinstance(value, list):
        return ('list', [typed(v, now) for v in value])
    if isinstance(value, dict):
        items = [(typed(k, now), typed(v, now)) for k, v in value.items()]
        items.sort(key=lambda kv: repr(_sort_key(kv[0])))
        return ('dict', items)
    return ('other', repr(value))


def _typed_string(kind, s, now):
    if TIME_STRING.match(s):
        return (kind + '-time', float(s) - now)
    return (kind, s)


def _sort_key(t):
    # times sort together whatever their offset
    if t[0] in ('time', 'bytes-time', 'text-time'):
        return (t[0],)
    return t


def differences(a, b, path='reply'):
    """Every difference between the typed trees a and b, as descriptions
    that start with the path to it."""
    if a[0] != b[0]:
        return ['%s: Python %s, coordinated %s' % (path, show(a), show(b))]
    kind = a[0]
    if kind in ('time', 'bytes-time', 'text-time'):
        if abs(a[1] - b[1]) > TIME_TOLERANCE:
            return ['%s: time offsets %+.1fs vs %+.1fs' % (path, a[1], b[1])]
        return []
    if kind in ('tuple', 'list'):
        if len(a[1]) != len(b[1]):
            return ['%s: Python %s, coordinated %s' % (path, show(a),
                                                       show(b))]
        out = []
        for i, (x, y) in enumerate(zip(a[1], b[1])):
            out += differences(x, y, '%s[%d]' % (path, i))
        return out
    if kind == 'dict':
        ka = [repr(_sort_key(k)) for k, _ in a[1]]
        kb = [repr(_sort_key(k)) for k, _ in b[1]]
        if ka != kb:
            return ['%s: keys Python %s, coordinated %s' % (
                path, [show(k) for k, _ in a[1]], [show(k) for k, _ in b[1]])]
        out = []
        for (k, x), (_, y) in zip(a[1], b[1]):
            out += differences(x, y, '%s[%s]' % (path, show(k)))
        return out
    if a != b:
        return ['%s: Python %s, coordinated %s' % (path, show(a), show(b))]
    return []


def show(t):
    """Short readable form of a typed tree."""
    kind = t[0]
    if kind == 'null':
        return 'None'
    if kind in ('bool', 'int', 'float', 'other'):
        return '%s %r' % (kind, t[1])
    if kind in ('bytes', 'text'):
        return '%s %r' % (kind, t[1][:60])
    if kind.endswith('time'):
        return '%s %+.1fs' % (kind, t[1])
    if kind in ('tuple', 'list'):
        inner = ', '.join(show(x) for x in t[1][:4])
        more = ', ...' if len(t[1]) > 4 else ''
        return '%s(%s%s)' % (kind, inner, more)
    if kind == 'dict':
        inner = ', '.join('%s: %s' % (show(k), show(v)) for k, v in t[1][:4])
        more = ', ...' if len(t[1]) > 4 else ''
        return '{%s%s}' % (inner, more)
    if kind == 'error':
        return 'error %s' % t[1]
    return repr(t)


class Recorder(object):
    """One daemon's side of a case: calls it and records typed replies."""

    def __init__(self, address):
        self.address = address
        self.tm = TaskMaster({'address': address, 'retries': 0})
        self.replies = []

    def __call__(self, method, *params, **kw):
        """Call method(*params); record and return the reply (or error).

        differs=True marks a call whose reply is expected to differ (the
        case must then be in the table of docs/compat.md); differs='text'
        (or a tuple of such) allows only differences whose path contains
        text (e.g. "'expires']"), so the rest of the reply is still
        compared.
        """
        label = '%s%r' % (method, params)
        if len(label) > 100:
            label = label[:97] + '...'
        now = time.time()
        try:
            reply = self.tm._rpc(method, params)
        except Exception as ex:  # the RPC error reply
            text = ex.args[0] if ex.args else ''
            if not isinstance(text, basestring):
                text = repr(text)
            m = ERROR_KIND.match(text)
            self._record(label, ('error', m.group(1) if m else
                                 text.split('\n', 1)[0][:60]), kw)
            return ex
        if method == 'get_child_work_units':
            reply = _child_units_in_key_order(reply)
        self._record(label, typed(reply, now), kw)
        return reply

    def note(self, label, value, **kw):
        """Record a value the case computed itself (e.g. after a worker)."""
        self._record(label, typed(value, time.time()), kw)

    def _record(self, label, tree, kw):
        differs = kw.pop('differs', False)
        if kw:
            raise TypeError('unexpected keywords %r' % sorted(kw))
        self.replies.append((label, tree, differs))

    def close(self):
        self.tm.close()


def _child_units_in_key_order(reply):
    """get_child_work_units with each child's units sorted by key.

    The Python daemon keeps a worker's units in a set of objects, so it
    lists them in an order that changes from run to run; only which units
    a child holds is comparable.
    """
    if isinstance(reply, (tuple, list)) and reply:
        # the RPC answers (children, message)
        return type(reply)([_child_units_in_key_order(reply[0])] +
                           list(reply[1:]))
    if not isinstance(reply, dict):
        return reply
    return dict((child, sorted(units, key=lambda u: repr(u.get('work_unit_key')))
                 if isinstance(units, list) else units)
                for child, units in reply.items())


def compare(py_replies, our_replies):
    """(unexpected differences, marked calls that no longer differ,
    whether any call was marked) between two recorded runs of one case."""
    unexpected, stale = [], []
    marked = any(r[2] for r in py_replies)
    if len(py_replies) != len(our_replies):
        unexpected.append('the runs made %d and %d calls'
                          % (len(py_replies), len(our_replies)))
        return unexpected, stale, marked
    for (label, a, differs), (_, b, _) in zip(py_replies, our_replies):
        diffs = differences(a, b)
        if differs and not diffs:
            stale.append(label)
        for d in diffs:
            if differs is True or _allowed(differs, d.split(':')[0]):
                continue
            unexpected.append('%s -> %s' % (label, d))
    return unexpected, stale, marked


def _allowed(differs, path):
    """Whether a difference at path is allowed by a differs= mark."""
    if not differs:
        return False
    if isinstance(differs, basestring):
        differs = (differs,)
    return any(part in path for part in differs)
