"""Seeded random differential test: the real Python daemon and coordinated.

For each seed a random sequence of legacy RPC calls (the ones a fleet of
`coordinate` clients and workers makes) is sent, call by call, to a fresh
Python daemon (coordinate 0.1.5) and to coordinated (cleared first, as the
cases of test_compare.py are); every reply is compared as a typed tree
(harness.py), and every STATE_EVERY calls the whole visible state is
compared too (specs, metas, counts, units by key and by priority, unit
statuses, workers, child work units).

Environment:

- COMPARE_RANDOM_SEEDS: how many seeds (default 8: seeds 1..8);
- COMPARE_RANDOM_OPS: calls per seed (default 250), besides the state
  comparisons;
- COMPARE_RANDOM_SEED=n: run only seed n (to replay a failure).

A failure prints the seed, the calls made (as sent to the Python daemon)
and the first difference.

Determinism. The sequence depends only on the seed and on the Python
daemon's answers (the generator reads the Python daemon's unit statuses
after each call, with reads that change nothing but an expired lease; no
lease expires, see below), so a seed replays. What the two daemons may
legitimately choose differently is kept out:

- Choosing a spec in get_work. Python's scheduler (job_server.py,
  WorkSpecScheduler.choose_work_spec) picks among the best "source", "loop"
  and "continuous" specs at random, weighted 20:10:1, and breaks score ties
  in dict order; ours is deterministic (compat.md D1). So get_work is sent
  only when at most one spec could hand out work under its
  `work_spec_names` filter (none means every spec): the generator narrows
  the filter to one spec when several have work. Python's scheduler also
  fails to find work a single spec has (a spec redefined continuous keeps
  its old place in the scheduler's graph until another spec is set,
  controlled or deleted; a spec whose `then` names a missing spec and that
  is itself a `then` target sits in none of its lists). To know, the test
  keeps a mirror of the Python scheduler: Python's own WorkSpecScheduler
  class over stand-in specs built from the same definitions with Python's
  own spec_dict_to_kwargs, rebuilt exactly when the daemon rebuilds its
  own. A get_work where the mirror's choice differs from the one spec
  coordinated can hand out is not sent (counted in the output).
- Continuous specs. Python makes a synthetic unit whenever the queue is
  empty, even while one is PENDING, and several per call without an
  interval (compat.md section 15 #20); we make one per call and none while a unit
  of the spec is PENDING. So get_work is sent to a continuous spec only
  when none of its units is PENDING, and asks for one unit when no
  interval holds back a second synthetic unit (at most as many as are
  AVAILABLE otherwise). Synthetic keys are times (str(time.time()) in
  Python, <seconds>.<millis> here): the test maps each Python key to ours
  for later calls, and the harness compares them as times. Two synthetic
  units of one spec are made at least SYNTHETIC_GAP apart so that Python's
  10 ms keys cannot repeat. Synthetic units (priority -1) are finished or
  failed, never given back or chained from: Python never hands out a spec
  whose best AVAILABLE unit has a negative priority (section 15 #32); every other
  priority the test sends is >= 0.
- Leases are 600 s or more, so the wall clock expires nothing. A lease
  ended early (lease_time <= 0, Python's worker giving a unit back) is
  only sent for a unit no child worker holds, of a spec without a retry
  limit, that is its spec's only PENDING unit: Python sweeps such a lease
  lazily and then forgets the holder in get_child_work_units (section
  15 #36); our max_retries (an extension, section 15 #6) may fail it
  (`max_retries` is otherwise 0 or at least 1000); and Python moves the
  changed lease in its pending heap with an indexed heapreplace that only
  sifts down (coordinate/heapq.py), so a lease ended while an earlier one
  is still running is swept only once it reaches the heap's top: until
  then the unit stays PENDING and counts against max_running.
- Re-adding a key that is PENDING, or with a priority, is not sent
  (compat.md D4); chained outputs use fresh keys for the same reason.
- `clear` breaks the Python daemon's scheduler (section 15 #33): it is
  sent only in the last fifth of a seed's calls, and no get_work after it;
  each seed has a Python daemon of its own.
- get_child_work_units. Python lists what its record of each child holds:
  every unit handed to it since it registered, less those it finished or
  failed, all named with the spec of its last get_work; units deleted,
  given back and leased again by another worker stay listed. We list what
  the child holds. So a child asks for work again only from the spec it
  works on, and a unit in a child's record is not given back (status 1 or
  3) or deleted (del_work_units, del_work_spec, clear); the test keeps
  that record as Python does. A unit given back, or ended by lease_time
  <= 0 (above), by a worker that is no child is not seen there.
- get_worker_info: ours adds `age_seconds` (section 15 #24, the `random-ops` row
  of compat.md's table); exactly that key is checked (a number >= 0) and
  removed from our reply before comparing, nothing else is allowed.
"""
from __future__ import absolute_import, print_function

import os
import random
import sys
import time

import pytest
from coordinate.job_server import WorkSpecScheduler
from coordinate.work_spec import WorkSpec

import python_daemon
from harness import (Recorder, TIME_STRING, allowed_differences, compare,
                     typed)

CASE_ID = 'random-ops'
STATE_EVERY = 6
SYNTHETIC_GAP = 0.03
LEASE = (600, 3600)

SPECS = ['a', 'b', 'c', 'd']
WORKERS = ['w1', 'w2', 'p1', 'c1', 'c2', 'u1']  # u1 never registers
PARENTS = {'c1': 'p1', 'c2': 'p1'}
AVAILABLE, PENDING, FINISHED, FAILED = 1, 3, 4, 5


def _seeds():
    one = os.environ.get('COMPARE_RANDOM_SEED')
    if one:
        return [int(one)]
    return list(range(1, int(os.environ.get('COMPARE_RANDOM_SEEDS', 8)) + 1))


OPS = int(os.environ.get('COMPARE_RANDOM_OPS', 250))


class Skip(Exception):
    """The generator cannot make this kind of call now."""


class MirrorSpec(object):
    """What Python's WorkSpecScheduler reads of a WorkSpec, from the
    generator's model of the Python daemon."""

    def __init__(self, name, definition):
        self.name = name
        self.next_continuous = 0
        self.last_synthetic = 0
        self.units = {}  # key -> (status, worker_id), as Python reports
        # Python's queue of AVAILABLE units may be out of order (see
        # Run.note_heap): get_work from it is not sent while so.
        self.heap_suspect = False
        self.set_definition(definition)

    def set_definition(self, definition):
        # Python's own conversion: the attributes update_data() sets
        for k, v in WorkSpec.spec_dict_to_kwargs(definition).items():
            setattr(self, k, v)

    def count(self, status):
        return sum(1 for s, _ in self.units.values() if s == status)

    def will_get_work(self):
        if self.max_running is not None and \
                self.count(PENDING) >= self.max_running:
            return False
        if self.count(AVAILABLE):
            return True
        return bool(self.continuous) and time.time() >= self.next_continuous

    # --- the interface WorkSpecScheduler uses
    def priority(self):
        return 0  # the test never queues a unit of negative priority

    def sched_data(self):
        return (self.will_get_work(), bool(self.count(AVAILABLE)),
                self.count(PENDING))

    # --- what coordinated's scheduler would say (compat.md D1, section 15 #20)
    def ours_eligible(self):
        if self.status != 1:
            return False
        if self.max_running is not None and \
                self.count(PENDING) >= self.max_running:
            return False
        if self.count(AVAILABLE):
            return True
        return (bool(self.continuous) and not self.count(PENDING) and
                time.time() >= self.next_continuous)


class Run(object):
    """One seed: the generator, both daemons, the comparison."""

    def __init__(self, seed, py_address, our_address):
        self.seed = seed
        self.rng = random.Random(seed)
        self.py = Recorder(py_address)
        self.ours = Recorder(our_address)
        self.log = []
        self.specs = {}  # name -> MirrorSpec (the Python daemon's specs)
        self.mirror = WorkSpecScheduler(self.specs)
        # (spec, Python's synthetic key) -> ours: Python's keys are times
        # to 10 ms, so two specs' synthetic units can share one
        self.alias = {}
        self.synthetic = set()  # (spec, Python key)
        self.registered = {}  # worker id -> parent
        # Python's record of what each registered child works on: the
        # spec of its last get_work and the units handed to it since,
        # less those finished or failed while it held them
        self.child_spec = {}
        self.child_units = {}
        self.cleared = False
        self.out_counter = 0
        self.skipped = {}
        self.age_checked = 0
        self.synthetic_moved = 0
        self.in_state = False

    # --- sending -----------------------------------------------------------

    def ours_params(self, params):
        # every call naming units names their spec first
        spec = params[0] if params and isinstance(params[0], basestring) \
            else None

        def sub(v):
            if isinstance(v, basestring) and (spec, v) in self.alias:
                return self.alias[(spec, v)]
            if isinstance(v, list):
                return [sub(x) for x in v]
            if isinstance(v, tuple):
                return tuple(sub(x) for x in v)
            if isinstance(v, dict):
                return dict((k, sub(x)) for k, x in v.items())
            return v
        return tuple(sub(p) for p in params)

    def call(self, method, *params):
        """Send to both; compare; return the Python and our replies."""
        if not self.in_state:
            self.log.append('%s%r' % (method, params))
        a = self.py(method, *params)
        b = self.ours(method, *self.ours_params(params))
        if method == 'get_worker_info':
            self._drop_age(b)
        if method == 'get_work_units' and 'state' in params[1]:
            self._synthetic_last(params[0], a, b)
        unexpected, _, _ = compare(self.py.replies[-1:],
                                   self.ours.replies[-1:])
        if unexpected:
            self.fail('\n  '.join(unexpected))
        return a, b

    def _synthetic_last(self, spec, a, b):
        # Our synthetic units have priority 0, Python's -1 (SEMANTICS
        # section 9): a listing by priority places them elsewhere. Only
        # their place may differ: both lists get them moved to the end.
        ours_keys = set(self.alias[(s, k)] for s, k in self.synthetic
                        if s == spec)
        if not ours_keys:
            return
        for rec, reply, keys in ((self.py, a, set(
                k for s, k in self.synthetic if s == spec)),
                (self.ours, b, ours_keys)):
            if isinstance(reply, Exception) or not reply[0]:
                continue
            units = list(reply[0])
            moved = ([u for u in units if u[0] not in keys] +
                     sorted((u for u in units if u[0] in keys),
                            key=lambda u: u[0]))
            label, _, differs = rec.replies[-1]
            rec.replies[-1] = (label, typed((moved, reply[1]), time.time()),
                               differs)
        self.synthetic_moved += 1

    def _drop_age(self, reply):
        # Our only allowed difference: `age_seconds` added to the data.
        data = reply[0] if isinstance(reply, (tuple, list)) else None
        if not isinstance(data, dict):
            return
        age = data.pop('age_seconds', None)
        if not isinstance(age, float) or age < 0:
            self.fail('get_worker_info: age_seconds %r' % (age,))
        label, _, differs = self.ours.replies[-1]
        self.ours.replies[-1] = (label, typed(reply, time.time()), differs)
        self.age_checked += 1

    def fail(self, what):
        pytest.fail('seed %d (COMPARE_RANDOM_SEED=%d) differs at call %d:\n'
                    '  %s\ncalls (as sent to the Python daemon):\n  %s'
                    % (self.seed, self.seed, len(self.log), what,
                       '\n  '.join('%3d %s' % (i + 1, c[:300]) for i, c in
                                   enumerate(self.log))), pytrace=False)

    def py_rpc(self, method, *params):
        """A read of the Python daemon alone, for the generator."""
        return self.py.tm._rpc(method, params)

    def refresh(self):
        """Read every unit's status and worker from the Python daemon."""
        for name, spec in self.specs.items():
            listed, _ = self.py_rpc('get_work_units', name, {'limit': 10000})
            keys = [k for k, _ in listed]
            statuses, _ = self.py_rpc('get_work_unit_status', name, keys) \
                if keys else ([], None)
            spec.units = dict(
                (k, (st['status'], st.get('worker_id')))
                for k, st in zip(keys, statuses) if st is not None)
        self.synthetic = set((s, k) for s, k in self.synthetic
                             if s in self.specs and k in self.specs[s].units)
        for child, units in self.child_units.items():
            for s, k in list(units):
                st, holder = self.specs[s].units[k]
                if st in (FINISHED, FAILED) and holder == child:
                    units.discard((s, k))

    def child_held(self, spec, keys=None, statuses=None):
        """Whether a child's record holds a unit of spec (of keys, in
        statuses): see `get_child_work_units` in the docstring."""
        for units in self.child_units.values():
            for s, k in units:
                if s != spec or (keys is not None and k not in keys):
                    continue
                if statuses is None or \
                        self.specs[s].units[k][0] in statuses:
                    return True
        return False

    # --- random values -----------------------------------------------------

    def text(self, s):
        return unicode(s) if self.rng.random() < 0.3 else s

    def value(self, depth=0):
        r = self.rng.random()
        if r < 0.2:
            return self.rng.randint(-5, 10 ** 6)
        if r < 0.3:
            return self.rng.choice([0.5, -2.25, 1e3])
        if r < 0.45:
            return self.text(self.rng.choice(['x', 'hello', '']))
        if r < 0.5:
            return self.rng.choice([True, False, None])
        if r < 0.6 and depth < 2:
            return [self.value(depth + 1) for _ in range(self.rng.randint(0, 3))]
        if r < 0.65 and depth < 2:
            return tuple(self.value(depth + 1)
                         for _ in range(self.rng.randint(0, 2)))
        if r < 0.8 and depth < 2:
            return self.data(depth + 1)
        return self.rng.randint(0, 100)

    def data(self, depth=0):
        return dict((self.text(self.rng.choice(['n', 'x', 'y', 'url', 'k2'])),
                     self.value(depth))
                    for _ in range(self.rng.randint(0, 3)))

    def priority(self):
        return self.rng.choice([0, 1, 2, 5, 2.5, 10])

    def spec_name(self, existing=0.85):
        names = sorted(self.specs)
        if names and self.rng.random() < existing:
            return self.rng.choice(names)
        return self.rng.choice(SPECS + ['missing'])

    def unit(self, spec, statuses=None, real=False):
        """A key of spec (as Python has it) in one of statuses."""
        keys = sorted(k for k, (st, _) in spec.units.items()
                      if (statuses is None or st in statuses) and
                      not (real and (spec.name, k) in self.synthetic))
        if not keys:
            raise Skip('no unit')
        return self.rng.choice(keys)

    # --- the calls ---------------------------------------------------------

    def op_set_work_spec(self):
        name = self.rng.choice(SPECS)
        d = {'name': name}
        r = self.rng.random
        if r() < 0.4:
            d['weight'] = self.rng.randint(1, 40)
        elif r() < 0.3:
            d['nice'] = self.rng.randint(-5, 25)
        if r() < 0.2:
            d['priority'] = self.rng.randint(-3, 3)
        if r() < 0.2:
            d['min_gb'] = self.rng.choice([0.5, 2, 8])
        if r() < 0.4:
            d['max_running'] = self.rng.choice([None, 0, 1, 2, 3])
        if r() < 0.3:
            d['max_getwork'] = self.rng.choice([None, 0, 1, 2])
        if r() < 0.2:
            d['max_retries'] = self.rng.choice([0, 1000])
        if r() < 0.5:
            d['then'] = self.rng.choice(SPECS + ['missing'])
            if r() < 0.4:
                d['then_preempts'] = self.rng.choice([True, False])
        if r() < 0.25:
            d['continuous'] = True
            if r() < 0.7:
                d['interval'] = self.rng.choice([None, 3600])
        if r() < 0.1:
            d['disabled'] = True
        if r() < 0.5:
            d['desc'] = self.text('spec %s' % name)
        if r() < 0.2:
            d['config'] = self.data()
        self.call('set_work_spec', d)
        if name in self.specs:
            self.specs[name].set_definition(d)  # no scheduler rebuild
        else:
            self.specs[name] = MirrorSpec(name, d)
            self.mirror.update()

    def op_add_work_units(self):
        name = self.spec_name()
        spec = self.specs.get(name)
        items = []
        for _ in range(self.rng.randint(1, 4)):
            existing = spec and self.rng.random() < 0.3
            if existing:
                key = self.unit(spec, (AVAILABLE, FINISHED, FAILED),
                                real=True)
                items.append((self.text(key), self.data()))
                continue
            key = self.text('k%d' % self.rng.randint(1, 40))
            if spec and key in spec.units:
                if spec.units[key][0] == PENDING:
                    continue
                items.append((key, self.data()))
                continue
            r = self.rng.random()
            if r < 0.5:
                items.append((key, self.data()))
            elif r < 0.8:
                items.append((key, self.data(), {'priority': self.priority()}))
            else:
                items.append((key, self.data(), {'priority': self.priority()},
                              self.priority()))
        if not items:
            raise Skip('only PENDING keys')
        keys = [i[0] for i in items]
        if len(set(keys)) != len(keys):
            # a repeated key: the last item wins in Python; keep them all
            # without priority so that the winner cannot matter for it
            items = [i[:2] for i in items]
        self.call('add_work_units', name, items)

    def op_get_work(self):
        if self.cleared:
            raise Skip('get_work after clear')
        worker = self.rng.choice(WORKERS)
        names = None
        if self.rng.random() < 0.6:
            names = self.rng.sample(SPECS + ['missing'], self.rng.randint(1, 3))
        if self.child_units.get(worker):
            # a child asks again only for the spec it works on
            names = [self.child_spec[worker]]
        considered = [s for n, s in sorted(self.specs.items())
                      if names is None or n in names]
        ours = [s for s in considered if s.ours_eligible()]
        py = [s for s in considered if s.status == 1 and s.will_get_work()
              and (s.count(AVAILABLE) or s.continuous)]
        both = sorted(set(s.name for s in ours + py))
        if len(both) > 1:
            pick = self.rng.choice(both)
            names = [pick] + [n for n in (names or [])
                              if n not in both]
            self.rng.shuffle(names)
            ours = [s for s in ours if s.name == pick]
        valid_names = names

        def valid(spec):
            return not valid_names or spec.name in valid_names
        py_choice = self.mirror.choose_work_spec(valid)
        our_choice = ours[0].name if ours else None
        if py_choice != our_choice:
            raise Skip('Python scheduler quirk: %s vs %s'
                       % (py_choice, our_choice))
        if our_choice is not None and self.specs[our_choice].heap_suspect:
            raise Skip('Python heap out of order')
        max_jobs = self.rng.choice([None, 1, 1, 2, 3, 5])
        if our_choice is not None:
            s = self.specs[our_choice]
            avail = s.count(AVAILABLE)
            if s.continuous and time.time() >= s.next_continuous:
                # Python would add synthetic units after the AVAILABLE
                # ones, and several without an interval (section 15 #20)
                gap = s.last_synthetic + SYNTHETIC_GAP - time.time()
                if gap > 0:
                    time.sleep(gap)
                if avail:
                    limit = avail
                elif s.interval is None or s.interval < 60:
                    limit = 1
                else:
                    limit = None
                if limit is not None and (max_jobs or 1) > limit:
                    max_jobs = limit
        options = {'lease_time': self.rng.randint(*LEASE)}
        if max_jobs is not None:
            options['max_jobs'] = max_jobs
        if names is not None:
            options['work_spec_names'] = names
        if self.rng.random() < 0.3:
            options['available_gb'] = self.rng.choice([0.5, 4, 16])
        a, b = self.call('get_work', worker, options)
        if isinstance(a, Exception) or isinstance(b, Exception):
            return
        single = max_jobs in (None, 1)
        got_a = [a[0]] if single else a[0]
        got_b = [b[0]] if single else b[0]
        if worker in self.child_units and got_a and got_a[0][0] is not None:
            self.child_spec[worker] = got_a[0][0]
            self.child_units[worker].update((x[0], x[1]) for x in got_a)
        for x, y in zip(got_a, got_b):
            if x[1] is not None and TIME_STRING.match(x[1]) and \
                    TIME_STRING.match(y[1]):
                self.alias[(x[0], x[1])] = y[1]
                self.synthetic.add((x[0], x[1]))
                s = self.specs[x[0]]
                s.last_synthetic = time.time()
                if s.interval is not None:
                    s.next_continuous = time.time() + s.interval

    def op_update_work_unit(self):
        spec = self.specs.get(self.spec_name(existing=0.95))
        if spec is None:
            self.call('update_work_unit', 'missing', 'k1', {'status': 4})
            return
        r = self.rng.random()
        if r < 0.3:  # finish, maybe chaining
            key = self.unit(spec, (PENDING,) if self.rng.random() < 0.8
                            else None)
            opts = {'status': FINISHED}
            if self.rng.random() < 0.6:
                data = self.data()
                if (spec.name, key) not in self.synthetic and \
                        self.rng.random() < 0.7:
                    data['output'] = self.output()
                opts['data'] = data
        elif r < 0.45:  # fail
            key = self.unit(spec, (PENDING,) if self.rng.random() < 0.8
                            else None)
            opts = {'status': FAILED}
            if self.rng.random() < 0.6:
                opts['data'] = dict(self.data(), traceback=self.text('tb'))
        elif r < 0.6:  # give back / retry
            key = self.unit(spec, real=True)
            if self.child_held(spec.name, [key]):
                raise Skip('child unit given back')
            opts = self.rng.choice([{'status': AVAILABLE},
                                    {'status': AVAILABLE, 'lease_time': 0}])
        elif r < 0.7:  # a worker gives its lease back
            key = self.unit(spec, (PENDING,), real=True)
            holder = spec.units[key][1]
            if holder in PARENTS or spec.data.get('max_retries'):
                raise Skip('lease end by a child or with max_retries')
            if spec.count(PENDING) > 1:
                # Python moves the changed lease in its pending heap with
                # an indexed heapreplace that sifts down only, so the
                # ended lease is swept once it reaches the heap's top
                raise Skip('lease end with other units PENDING')
            opts = {'lease_time': self.rng.choice([-1, 0])}
        elif r < 0.85:  # lease renewal
            key = self.unit(spec, (PENDING,))
            opts = {'lease_time': self.rng.randint(*LEASE)}
            if self.rng.random() < 0.3:
                opts['data'] = self.data()
        elif r < 0.9:
            key = self.unit(spec, (AVAILABLE,), real=True)
            if self.child_held(spec.name, [key]):
                raise Skip('child unit given back')
            opts = {'status': PENDING, 'lease_time': self.rng.randint(*LEASE)}
        elif r < 0.95:
            key = self.unit(spec)
            opts = {'data': self.data()}
        else:
            key = self.text('nope')
            opts = {'status': FINISHED}
        self.call('update_work_unit', spec.name, key, opts)

    def output(self):
        def fresh():
            self.out_counter += 1
            return self.text('o%d' % self.out_counter)
        n = self.rng.randint(1, 3)
        r = self.rng.random()
        if r < 0.3:
            return dict((fresh(), self.data()) for _ in range(n))
        if r < 0.55:
            return [fresh() for _ in range(n)]
        if r < 0.8:
            return [(fresh(), self.data()) for _ in range(n)]
        return [(fresh(), self.data(), {'priority': self.priority()})
                for _ in range(n)]

    def op_prioritize_work_units(self):
        spec = self.specs.get(self.spec_name())
        name = spec.name if spec else 'missing'
        keys = []
        if spec and spec.units:
            keys = self.rng.sample(sorted(spec.units),
                                   min(len(spec.units), self.rng.randint(1, 3)))
        keys.append(self.text('nope'))
        opts = {'work_unit_keys': keys}
        if self.rng.random() < 0.6:
            opts['priority'] = self.priority()
        else:
            opts['adjustment'] = self.rng.choice([1, 3, 0.5])
        self.call('prioritize_work_units', name, opts)

    def op_del_work_units(self):
        spec = self.specs.get(self.spec_name())
        name = spec.name if spec else 'missing'
        r = self.rng.random()
        if r < 0.1:
            opts = {'all': True}
        elif r < 0.35:
            opts = {'state': self.rng.choice([1, 3, 4, 5])}
        elif r < 0.9 and spec and spec.units:
            opts = {'work_unit_keys': self.rng.sample(
                sorted(spec.units), min(len(spec.units), 2)) + ['nope']}
            if self.rng.random() < 0.4:
                opts['state'] = self.rng.choice([1, 3, 4, 5])
        else:
            opts = {}
        if spec and opts and self.child_held(
                name, None if 'all' in opts else opts.get('work_unit_keys'),
                None if 'all' in opts or 'state' not in opts
                else (opts['state'],)):
            raise Skip('child unit deleted')
        self.call('del_work_units', name, opts)

    def op_del_work_spec(self):
        name = self.spec_name(existing=0.9)
        if self.child_held(name):
            raise Skip('child unit deleted')
        self.call('del_work_spec', name)
        if name in self.specs:
            del self.specs[name]
            self.mirror.update()

    def op_control_work_spec(self):
        name = self.spec_name()
        opts = {}
        r = self.rng.random
        if r() < 0.4:
            opts['status'] = self.rng.choice([1, 2])
        if r() < 0.3:
            opts['weight'] = self.rng.randint(1, 40)
        if r() < 0.3:
            opts['max_running'] = self.rng.choice([None, 0, 1, 3])
        if r() < 0.15:
            opts['interval'] = self.rng.choice([None, 3600])
        if r() < 0.15:
            opts['continuous'] = self.rng.choice([True, False])
        self.call('control_work_spec', name, opts)
        spec = self.specs.get(name)
        if spec is None:
            return
        # as JobQueue.control_work_spec
        if opts.get('continuous') and not spec.data.get('continuous', False):
            return
        for k in ('continuous', 'status', 'weight', 'interval',
                  'max_running'):
            if k in opts:
                setattr(spec, k, opts[k])
        self.mirror.update()

    def op_read(self):
        name = self.spec_name()
        spec = self.specs.get(name)
        r = self.rng.random()
        if r < 0.2:
            self.call('count_work_units', name)
        elif r < 0.55:
            opts = {}
            if self.rng.random() < 0.5:
                st = [1, 3, 4, 5]
                opts['state'] = self.rng.choice(
                    st + [self.rng.sample(st, 2)])
            if self.rng.random() < 0.3:
                opts['start'] = self.text('k%d' % self.rng.randint(1, 40))
            if self.rng.random() < 0.3 and not (
                    'state' in opts and any(s == name
                                            for s, _ in self.synthetic)):
                # (a limit would cut the priority listing where our
                # synthetic units, priority 0 for Python's -1, differ)
                opts['limit'] = self.rng.randint(1, 5)
            if self.rng.random() < 0.1 and spec and spec.units:
                opts = {'work_unit_keys': sorted(spec.units)[:3] + ['nope']}
            self.call('get_work_units', name, opts)
        elif r < 0.75:
            keys = sorted(spec.units)[:5] if spec else []
            self.call('get_work_unit_status', name, keys + ['nope'])
        elif r < 0.85:
            self.call('list_work_specs', {})
        elif r < 0.92:
            self.call('get_work_spec', name)
        else:
            self.call('get_work_spec_meta', name)

    def op_worker_heartbeat(self):
        worker = self.rng.choice(WORKERS[:-1])
        parent = PARENTS.get(worker)
        self.call('worker_heartbeat', worker, self.rng.choice(['RUN', 'IDLE']),
                  self.rng.randint(600, 3600), self.data(), parent)
        if parent and worker not in self.registered:
            self.child_units[worker] = set()
        self.registered[worker] = parent

    def op_worker_unregister(self):
        worker = self.rng.choice(WORKERS)
        self.call('worker_unregister', worker)
        self.registered.pop(worker, None)
        self.child_units.pop(worker, None)

    def op_workers_read(self):
        r = self.rng.random()
        if r < 0.4:
            self.call('get_child_work_units', self.rng.choice(['p1', 'w1']))
        elif r < 0.6:
            self.call('mode_counts')
        elif r < 0.8:
            self.call('list_worker_modes')
        else:
            self.call('get_worker_info', self.rng.choice(WORKERS))

    def op_clear(self):
        if any(self.child_units.values()):
            raise Skip('child unit deleted')
        self.call('clear')
        self.specs.clear()
        self.mirror.update()
        self.cleared = True

    OPS = [
        (op_set_work_spec, 8), (op_add_work_units, 14), (op_get_work, 20),
        (op_update_work_unit, 20), (op_prioritize_work_units, 4),
        (op_del_work_units, 4), (op_del_work_spec, 2),
        (op_control_work_spec, 5), (op_read, 8), (op_worker_heartbeat, 5),
        (op_worker_unregister, 2), (op_workers_read, 5), (op_clear, 0.3),
    ]

    def state(self):
        """Compare everything a client can see."""
        self.log.append('[the whole state compared]')
        self.in_state = True
        try:
            self._state()
        finally:
            self.in_state = False

    def _state(self):
        self.call('list_work_specs', {})
        for name in SPECS:
            spec = self.specs.get(name)
            self.call('get_work_spec', name)
            self.call('get_work_spec_meta', name)
            self.call('count_work_units', name)
            self.call('get_work_units', name, {'limit': 10000})
            self.call('get_work_units', name,
                      {'state': [1, 3, 4, 5], 'limit': 10000})
            if spec is not None:
                self.call('get_work_unit_status', name,
                          sorted(spec.units) + ['nope'])
        self.call('list_worker_modes')
        self.call('mode_counts')
        for worker in WORKERS:
            self.call('get_worker_info', worker)
        self.call('get_child_work_units', 'p1')

    def run(self, n):
        ops, weights = zip(*self.OPS)
        total = float(sum(weights))
        done = 0
        while done < n:
            x = self.rng.random() * total
            for op, w in zip(ops, weights):
                x -= w
                if x < 0:
                    break
            if op is Run.op_clear.__func__ and done < n * 0.8:
                continue  # late: the Python daemon schedules nothing after
            available = self.available()
            try:
                op(self)
            except Skip as ex:
                why = str(ex)
                self.skipped[why] = self.skipped.get(why, 0) + 1
                continue
            done += 1
            self.refresh()
            self.note_heap(available, op is Run.op_get_work.__func__)
            if done % STATE_EVERY == 0:
                self.state()
        self.state()

    def available(self):
        """The keys of each spec's AVAILABLE units, as Python reports."""
        return dict((name, set(k for k, (st, _) in spec.units.items()
                               if st == AVAILABLE))
                    for name, spec in self.specs.items())

    def note_heap(self, before, was_get_work):
        """Marks the specs whose queue Python may have put out of order.

        Python takes an AVAILABLE unit out of the middle of its queue (an
        update or delete by key, coordinate/work_spec.py
        _available_queue_remove) with an indexed heappop that only sifts
        the moved entry down (coordinate/heapq.py), so the heap can go out
        of order and a later get_work hand out a lower-priority unit, or a
        higher key, first (compat.md section 15 #40; seed 46 of 400 calls
        found it). get_work takes units from the top, which keeps the
        order; a queue of at most one unit is in order.
        """
        for name, spec in self.specs.items():
            now = set(k for k, (st, _) in spec.units.items()
                      if st == AVAILABLE)
            if len(now) <= 1:
                spec.heap_suspect = False
            elif not was_get_work and before.get(name, set()) - now:
                spec.heap_suspect = True

    def close(self):
        self.py.close()
        self.ours.close()


def _clean(tm):
    specs, _ = tm._rpc('list_work_specs', ({},))
    for spec in specs:
        tm._rpc('del_work_spec', (spec['name'],))
    workers, _ = tm._rpc('list_worker_modes', ())
    for worker_id in workers:
        tm._rpc('worker_unregister', (worker_id,))


@pytest.mark.parametrize('seed', _seeds())
def test_random_ops(daemons, seed):
    _, ours = daemons
    assert ours.alive(), 'coordinated died; log:\n' + ours.log()
    # A Python daemon of its own: test_compare's `clear` case broke the
    # session's (its scheduler finds nothing after a clear), and so may
    # this seed.
    py = python_daemon.PythonDaemon().start()
    run = None
    try:
        run = Run(seed, py.address, ours.address)
        _clean(run.ours.tm)
        run.run(OPS)
    finally:
        if run is not None:
            run.close()
            print('seed %d: %d calls compared, skipped %r' % (
                seed, len(run.log), sorted(run.skipped.items())))
        py.cleanup()
    listed = CASE_ID in allowed_differences()
    assert (run.age_checked > 0) == listed, (
        'the %s row of docs/compat.md must list exactly the differences '
        'this test allows (get_worker_info age_seconds): %d allowed here, '
        'row %s' % (CASE_ID, run.age_checked,
                    'present' if listed else 'absent'))
