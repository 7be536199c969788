"""get_work, chaining and continuous specs: PROTOCOL.md §8.16, SEMANTICS §8-§10."""

import re
import time

import pytest

from rpcclient import as_text

AVAILABLE, PENDING, FINISHED, FAILED = 1, 3, 4, 5
NO_WORK = ((None, None, None), None)


def make_spec(conn, name, **extra):
    d = {b'name': name, b'min_gb': 1}
    d.update({k.encode(): v for k, v in extra.items()})
    assert conn.set_work_spec(d) == (True, None)


def units(conn, spec):
    got, msg = conn.get_work_units(spec, {})
    assert msg is None
    return got


@pytest.mark.parametrize('options', [{}, {b'max_jobs': 1},
                                     {b'lease_time': 900, b'max_jobs': 1}])
def test_no_work_single_is_null_triple(conn, options):
    assert conn.get_work(b'w', options) == NO_WORK


@pytest.mark.parametrize('max_jobs', [0, 2, 10])
def test_no_work_many_is_empty_list(conn, max_jobs):
    assert conn.get_work(b'w', {b'max_jobs': max_jobs}) == ([], None)


def test_single_is_tuple_triple(conn):
    make_spec(conn, b'ws')
    conn.add_work_units(b'ws', [(b'u', {b'x': 1})])
    got = conn.get_work(b'w', {b'max_jobs': 1})
    assert got == ((b'ws', b'u', {b'x': 1}), None)
    assert type(got) is tuple and type(got[0]) is tuple


def test_many_is_list_of_tuple_triples(conn):
    make_spec(conn, b'ws')
    conn.add_work_units(b'ws', [(b'u%d' % i, {}) for i in range(5)])
    got, msg = conn.get_work(b'w', {b'max_jobs': 3})
    assert msg is None
    assert type(got) is list
    assert got == [(b'ws', b'u0', {}), (b'ws', b'u1', {}), (b'ws', b'u2', {})]
    # max_jobs 0 keeps the list shape and hands out one unit.
    got, _ = conn.get_work(b'w', {b'max_jobs': 0})
    assert got == [(b'ws', b'u3', {})]


def test_text_spec_name_echoed_in_triple(conn):
    conn.set_work_spec({'name': 'tws', 'min_gb': 1})
    conn.add_work_units('tws', [('k', {})])
    (name, key, data), _ = conn.get_work('w', {})
    assert name == 'tws' and key == 'k' and data == {}


def test_units_come_from_one_spec(conn):
    make_spec(conn, b'a')
    make_spec(conn, b'b')
    conn.add_work_units(b'a', [(b'a1', {}), (b'a2', {})])
    conn.add_work_units(b'b', [(b'b1', {}), (b'b2', {})])
    got, _ = conn.get_work(b'w', {b'max_jobs': 10})
    assert len(got) == 2 and len({t[0] for t in got}) == 1


def test_work_spec_names_filter(conn):
    make_spec(conn, b'a')
    make_spec(conn, b'b')
    conn.add_work_units(b'a', [(b'a1', {})])
    conn.add_work_units(b'b', [(b'b1', {})])
    got = conn.get_work(b'w', {b'work_spec_names': [b'b', b'unknown']})
    assert got == ((b'b', b'b1', {}), None)
    assert conn.get_work(b'w', {b'work_spec_names': [b'b']}) == NO_WORK


def test_lease_time_honoured(conn):
    make_spec(conn, b'ws')
    conn.add_work_units(b'ws', [(b'u', {})])
    before = time.time()
    conn.get_work(b'w', {b'lease_time': 1000})
    st = as_text(conn.get_work_unit_status(b'ws', [b'u'])[0][0])
    assert before + 900 < st['expiration'] < time.time() + 1100


def test_expired_lease_is_available_again(conn):
    make_spec(conn, b'ws')
    conn.add_work_units(b'ws', [(b'u', {})])
    conn.get_work(b'w1', {})
    assert conn.get_work(b'w2', {}) == NO_WORK
    conn.update_work_unit(b'ws', b'u', {b'lease_time': -1})
    assert conn.get_work(b'w2', {}) == ((b'ws', b'u', {}), None)


def test_max_getwork_and_max_running(conn):
    make_spec(conn, b'g', max_getwork=2)
    conn.add_work_units(b'g', [(b'u%d' % i, {}) for i in range(5)])
    got, _ = conn.get_work(b'w', {b'max_jobs': 10})
    assert [t[1] for t in got] == [b'u0', b'u1']
    conn.clear()
    make_spec(conn, b'r', max_running=3)
    conn.add_work_units(b'r', [(b'u%d' % i, {}) for i in range(5)])
    got, _ = conn.get_work(b'w', {b'max_jobs': 2})
    assert len(got) == 2
    got, _ = conn.get_work(b'w', {b'max_jobs': 2})
    assert len(got) == 1
    assert conn.get_work(b'w', {b'max_jobs': 2}) == ([], None)


def test_paused_spec_gives_no_work(conn):
    make_spec(conn, b'ws')
    conn.add_work_units(b'ws', [(b'u', {})])
    conn.control_work_spec(b'ws', {b'status': 2})
    assert conn.get_work(b'w', {}) == NO_WORK
    conn.control_work_spec(b'ws', {b'status': 1})
    assert conn.get_work(b'w', {})[0][1] == b'u'


def test_higher_weight_spec_wins(conn):
    # test_get_too_many of the Python suite, over the wire.
    make_spec(conn, b'light', weight=1)
    make_spec(conn, b'heavy', weight=300)
    conn.add_work_units(b'light', [(b'l%d' % i, {}) for i in range(10)])
    conn.add_work_units(b'heavy', [(b'h%d' % i, {}) for i in range(4)])
    got, _ = conn.get_work(b'w', {b'max_jobs': 10})
    assert [t[1] for t in got] == [b'h0', b'h1', b'h2', b'h3']


class TestChaining:
    """SEMANTICS.md §10: finishing a unit of A with `output` feeds B."""

    @pytest.fixture
    def chain(self, conn):
        make_spec(conn, b'A', then=b'B')
        make_spec(conn, b'B')
        conn.add_work_units(b'A', [(b'a', {b'in': 1})])
        assert conn.get_work(b'w', {b'work_spec_names': [b'A']})[0][1] == b'a'
        return conn

    def finish(self, conn, output):
        assert conn.update_work_unit(
            b'A', b'a', {b'status': FINISHED,
                         b'data': {b'in': 1, b'output': output}}) == (True, None)

    def test_map_output(self, chain):
        self.finish(chain, {b'x': {b'd': (1,)}, 'y': {}})
        assert units(chain, b'B') == [(b'x', {b'd': (1,)}), ('y', {})]

    def test_list_of_names(self, chain):
        self.finish(chain, [b'p', 'q'])
        assert units(chain, b'B') == [(b'p', {}), ('q', {})]

    def test_list_of_items_with_priorities(self, chain):
        self.finish(chain, [(b'low', {b'n': 1}),
                            [b'hot', {}, {b'priority': 50}],
                            (b'warm', {}, None, 5),
                            b'plain'])
        assert sorted(units(chain, b'B')) == sorted(
            [(b'low', {b'n': 1}), (b'hot', {}), (b'warm', {}), (b'plain', {})])
        order = [chain.get_work(b'w', {b'work_spec_names': [b'B']})[0][1]
                 for _ in range(2)]
        assert order == [b'hot', b'warm']

    def test_refinish_does_not_chain_again(self, chain):
        self.finish(chain, [b'p'])
        chain.del_work_units(b'B', {b'all': True})
        self.finish(chain, [b'p'])
        assert units(chain, b'B') == []

    def test_fail_then_finish_chains(self, chain):
        chain.update_work_unit(b'A', b'a', {b'status': FAILED})
        self.finish(chain, [b'p'])
        assert units(chain, b'B') == [(b'p', {})]

    def test_no_output_no_units(self, chain):
        chain.update_work_unit(b'A', b'a', {b'status': FINISHED})
        assert units(chain, b'B') == []

    def test_missing_successor_is_silent(self, conn):
        make_spec(conn, b'A', then=b'Gone')
        conn.add_work_units(b'A', [(b'a', {})])
        conn.get_work(b'w', {})
        assert conn.update_work_unit(
            b'A', b'a', {b'status': FINISHED,
                         b'data': {b'output': [b'x']}}) == (True, None)
        assert conn.get_work_spec(b'Gone') is None


def test_continuous_spec_yields_synthetic_unit(conn):
    make_spec(conn, b'cont', continuous=True, interval=0)
    (name, key, data), msg = conn.get_work(b'w', {})
    assert name == b'cont' and msg is None
    assert re.match(r'^\d+\.\d+$', as_text(key)), key
    assert data == {}
    # Exactly one synthetic unit even when many are asked for. Two calls in
    # the same millisecond would make the same key, which is not created
    # twice, so ask until a new one comes (bounded by count, not time).
    conn.update_work_unit(b'cont', key, {b'status': FINISHED})
    for _ in range(10000):
        got, _ = conn.get_work(b'w', {b'max_jobs': 5})
        if got:
            break
    assert len(got) == 1 and got[0][0] == b'cont' and got[0][1] != key


def test_real_units_beat_synthetic_ones(conn):
    make_spec(conn, b'cont', continuous=True)
    conn.add_work_units(b'cont', [(b'real', {b'r': 1})])
    assert conn.get_work(b'w', {}) == ((b'cont', b'real', {b'r': 1}), None)


def test_continuous_turned_off_gives_no_work(conn):
    make_spec(conn, b'cont', continuous=True)
    conn.control_work_spec(b'cont', {b'continuous': False})
    assert conn.get_work(b'w', {}) == NO_WORK


def test_continuous_interval_throttles_synthetic_units(conn):
    # Only what does not depend on timing margins: with an hour's interval,
    # a second synthetic unit cannot come right after the first.
    make_spec(conn, b'hourly', continuous=True, interval=3600)
    (name, key, _), _ = conn.get_work(b'w', {})
    assert name == b'hourly'
    conn.update_work_unit(b'hourly', key, {b'status': FINISHED})
    assert conn.get_work(b'w', {}) == NO_WORK
    # Real units are still handed out inside the interval.
    conn.add_work_units(b'hourly', [(b'real', {})])
    assert conn.get_work(b'w', {})[0][1] == b'real'


def test_delayed_unit_counts_available_but_waits(conn):
    make_spec(conn, b'ws')
    conn.add_work_units(b'ws', [(b'later', {}, {b'delay': 3600}),
                                (b'now', {})])
    assert conn.count_work_units(b'ws') == ({AVAILABLE: 2}, None)
    assert conn.get_work(b'w', {b'max_jobs': 10}) == (
        [(b'ws', b'now', {})], None)
    assert conn.get_work(b'w', {}) == NO_WORK


def test_available_gb_is_ignored_by_default(conn):
    make_spec(conn, b'big', min_gb=64)
    conn.add_work_units(b'big', [(b'u', {})])
    assert conn.get_work(b'w', {b'available_gb': 0.5})[0][1] == b'u'


def test_then_successor_preempts(conn):
    make_spec(conn, b'A', then=b'B')
    make_spec(conn, b'B')
    conn.add_work_units(b'A', [(b'a', {})])
    conn.add_work_units(b'B', [(b'b', {})])
    assert conn.get_work(b'w', {})[0][0] == b'B'


def test_then_preempts_false_falls_back_to_name_order(conn):
    make_spec(conn, b'A', then=b'B', then_preempts=False)
    make_spec(conn, b'B')
    conn.add_work_units(b'A', [(b'a', {})])
    conn.add_work_units(b'B', [(b'b', {})])
    assert conn.get_work(b'w', {})[0][0] == b'A'


def test_concurrent_get_work_never_leases_a_unit_twice(conn, connect):
    import threading
    make_spec(conn, b'ws')
    keys = [b'u%04d' % i for i in range(400)]
    conn.add_work_units(b'ws', [(k, {}) for k in keys])
    conns = [connect() for _ in range(8)]
    leased = [[] for _ in conns]
    errors = []

    def worker(i):
        try:
            while True:
                got, _ = conns[i].get_work(b'w%d' % i, {b'max_jobs': 3})
                if not got:
                    return
                leased[i].extend(t[1] for t in got)
        except Exception as e:  # reported below; a thread cannot fail a test
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(conns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    everything = [k for per in leased for k in per]
    assert sorted(everything) == keys  # each unit exactly once
    assert conn.count_work_units(b'ws') == ({PENDING: 400}, None)
