"""Work unit methods over the wire: PROTOCOL.md §8.9-§8.15."""

import time
import uuid

import pytest

from rpcclient import RpcError, as_text

AVAILABLE, BLOCKED, PENDING, FINISHED, FAILED = 1, 2, 3, 4, 5

# Data exercising every type that must round-trip exactly (PROTOCOL §5.3).
RICH_DATA = {
    b'list': [1, 2, 3],
    b'tuple': (4, 5, 6),
    b'mixed': [1, (2, [3, 4])],
    b'uuid': uuid.UUID('01234567-89ab-cdef-0123-456789abcdef'),
    b'str': b'foo',
    'unicode': 'foo',
    'unicode2': 'f\u00fc',
    b'float': 1.5,
    b'neg': -17,
    b'big': 2 ** 70,
    b'bool': [True, False, None],
    b'empty': ((), [], {}),
    b'nested': {1: {2.5: b'float key'}, -3: 'neg key', None: 'null key',
                b'k': 'bytes key', 'k': 'text key'},
}


def make_spec(conn, name=b'ws', **extra):
    d = {b'name': name, b'min_gb': 1}
    d.update({k.encode(): v for k, v in extra.items()})
    assert conn.set_work_spec(d) == (True, None)
    return name


def status_of(conn, spec, key):
    statuses, msg = conn.get_work_unit_status(spec, [key])
    assert msg is None
    return as_text(statuses[0])


def test_add_work_units_and_get_back_as_tuples(conn):
    make_spec(conn)
    assert conn.add_work_units(b'ws', [(b'b', {b'x': 2}), (b'a', {b'x': 1})]) \
        == (True, None)
    assert conn.get_work_units(b'ws', {}) == (
        [(b'a', {b'x': 1}), (b'b', {b'x': 2})], None)


def test_add_work_units_accepts_plain_arrays_and_empty(conn):
    make_spec(conn)
    assert conn.add_work_units(b'ws', []) == (True, None)
    assert conn.add_work_units(b'ws', [[b'a', {}], [b'b', {}, None, None]]) \
        == (True, None)
    assert conn.count_work_units(b'ws') == ({AVAILABLE: 2}, None)


def test_add_work_units_unknown_spec(conn):
    ok, msg = conn.add_work_units(b'nope', [(b'a', {})])
    assert ok is False
    assert as_text(msg) == "no such work_spec 'nope'"


@pytest.mark.parametrize('items', [
    [(b'good', {}), (17, {})],        # non-string key
    [(b'good', {}), (b'short',)],     # fewer than 2 elements
    [(b'good', {}), b'not an item'],  # not an array
])
def test_add_work_units_invalid_item_adds_nothing(conn, items):
    make_spec(conn)
    with pytest.raises(RpcError):
        conn.add_work_units(b'ws', items)
    assert conn.get_work_units(b'ws', {}) == ([], None)


def test_duplicate_keys_last_wins(conn):
    make_spec(conn)
    conn.add_work_units(b'ws', [(b'a', {b'v': 1}), (b'a', {b'v': 2})])
    assert conn.get_work_units(b'ws', {}) == ([(b'a', {b'v': 2})], None)


def test_data_round_trips_exactly(conn):
    make_spec(conn)
    conn.add_work_units(b'ws', [(b'rich', RICH_DATA)])
    assert conn.get_work_units(b'ws', {}) == ([(b'rich', RICH_DATA)], None)
    got = conn.get_work(b'w', {b'max_jobs': 1})
    assert got == ((b'ws', b'rich', RICH_DATA), None)
    # The exact types, not just equality: bytes vs text keys both present.
    data = got[0][2]
    assert type(data[b'tuple']) is tuple and type(data[b'list']) is list
    assert type(data[b'mixed'][1]) is tuple and type(data[b'mixed'][1][1]) is list
    assert type(data[b'float']) is float and type(data[b'neg']) is int


@pytest.mark.parametrize('key', [b'\xff\x80', b'\x00', b'', b'f\xfc',
                                 b'\x00a\x00b', 'f\u00fc'])
def test_unusual_keys_round_trip(conn, key):
    make_spec(conn)
    conn.add_work_units(b'ws', [(key, {b'k': key})])
    units, _ = conn.get_work_units(b'ws', {})
    assert units == [(key, {b'k': key})]
    assert type(units[0][0]) is type(key)
    assert conn.get_work_units(b'ws', {b'work_unit_keys': [key]}) == (
        [(key, {b'k': key})], None)
    assert status_of(conn, b'ws', key)['status'] == AVAILABLE
    spec_name, got_key, data = conn.get_work(b'w', {})[0]
    assert (got_key, data) == (key, {b'k': key})
    assert conn.update_work_unit(b'ws', key, {b'status': FINISHED}) == (True, None)
    assert conn.count_work_units(b'ws') == ({FINISHED: 1}, None)


def test_text_and_byte_keys_are_one_unit(conn):
    make_spec(conn)
    conn.add_work_units(b'ws', [('f\u00fc', {b'v': 1})])
    conn.add_work_units(b'ws', [(b'f\xc3\xbc', {b'v': 2})])
    units, _ = conn.get_work_units(b'ws', {})
    assert len(units) == 1 and units[0][1] == {b'v': 2}


def test_keys_ordered_bytewise(conn):
    make_spec(conn)
    keys = [b'\xff', b'b', b'a', b'\x00', b'', b'ab']
    conn.add_work_units(b'ws', [(k, {}) for k in keys])
    units, _ = conn.get_work_units(b'ws', {})
    assert [u[0] for u in units] == sorted(keys)


def test_count_work_units_integer_keys(conn):
    make_spec(conn)
    conn.add_work_units(b'ws', [(b'a', {}), (b'b', {}), (b'c', {}), (b'd', {})])
    assert conn.count_work_units(b'ws') == ({AVAILABLE: 4}, None)
    conn.get_work(b'w', {})                                    # a pending
    conn.update_work_unit(b'ws', b'b', {b'status': FINISHED})
    conn.update_work_unit(b'ws', b'c', {b'status': FAILED})
    counts, msg = conn.count_work_units(b'ws')
    assert msg is None
    assert counts == {AVAILABLE: 1, PENDING: 1, FINISHED: 1, FAILED: 1}
    assert all(type(k) is int for k in counts)


def test_count_work_units_unknown_spec(conn):
    ok, msg = conn.count_work_units(b'nope')
    assert ok is False
    assert as_text(msg) == "no such work_spec 'nope'"


def test_get_work_units_options(conn):
    make_spec(conn)
    conn.add_work_units(b'ws', [(b'k%d' % i, {b'i': i}) for i in range(6)])
    conn.get_work(b'w', {b'max_jobs': 2})                      # k0, k1 pending
    conn.update_work_unit(b'ws', b'k0', {b'status': FINISHED})
    conn.prioritize_work_units(b'ws', {b'work_unit_keys': [b'k5'],
                                       b'priority': 10, b'adjustment': None})

    def keys(options):
        units, msg = conn.get_work_units(b'ws', options)
        assert msg is None
        assert all(type(u) is tuple for u in units)
        return [u[0] for u in units]

    assert keys({}) == [b'k0', b'k1', b'k2', b'k3', b'k4', b'k5']
    assert keys({b'limit': 2}) == [b'k0', b'k1']
    assert keys({b'start': b'k3'}) == [b'k3', b'k4', b'k5']
    assert keys({b'state': FINISHED}) == [b'k0']
    # State lists are ordered by priority, then key; tuple or array.
    assert keys({b'state': (AVAILABLE, PENDING)}) == [b'k5', b'k1', b'k2',
                                                       b'k3', b'k4']
    assert keys({b'state': [AVAILABLE]}) == [b'k5', b'k2', b'k3', b'k4']
    assert keys({b'state': BLOCKED}) == []
    assert conn.get_work_units(b'ws', {b'work_unit_keys': [b'k2', b'zz', b'k0']}) \
        == ([(b'k2', {b'i': 2}), (b'zz', None), (b'k0', {b'i': 0})], None)


def test_get_work_units_unknown_spec(conn):
    units, msg = conn.get_work_units(b'nope', {})
    assert units is None
    assert as_text(msg) == "no such work_spec 'nope'"


def test_prioritize_set_and_adjust(conn):
    make_spec(conn)
    conn.add_work_units(b'ws', [(b'a', {}), (b'b', {}), (b'c', {})])
    assert conn.prioritize_work_units(
        b'ws', {b'work_unit_keys': [b'c'], b'priority': 5,
                b'adjustment': None}) == (True, None)
    assert conn.prioritize_work_units(
        b'ws', {b'work_unit_keys': [b'a', b'unknown'], b'priority': None,
                b'adjustment': 7}) == (True, None)
    order = []
    for _ in range(3):
        order.append(conn.get_work(b'w', {})[0][1])
    assert order == [b'a', b'c', b'b']


def test_prioritize_messages(conn):
    ok, msg = conn.prioritize_work_units(b'nope', {b'work_unit_keys': [b'a']})
    assert ok is False and as_text(msg) == "no such work_spec 'nope'"
    make_spec(conn)
    ok, msg = conn.prioritize_work_units(b'ws', {b'priority': 1})
    assert ok is False and as_text(msg) == 'missing work_unit_keys'


def test_add_with_priority_meta_and_fourth_element(conn):
    make_spec(conn)
    conn.add_work_units(b'ws', [(b'a', {}), (b'b', {}, {b'priority': 5}),
                                (b'c', {}, {b'priority': 5}, 9)])
    order = [conn.get_work(b'w', {})[0][1] for _ in range(3)]
    assert order == [b'c', b'b', b'a']


def prepare_one_of_each(conn):
    make_spec(conn)
    conn.add_work_units(b'ws', [(b'AV', {}), (b'FA', {}), (b'FI', {}),
                                (b'PE', {})])
    conn.update_work_unit(b'ws', b'FA', {b'status': FAILED})
    conn.update_work_unit(b'ws', b'FI', {b'status': FINISHED})
    conn.update_work_unit(b'ws', b'PE', {b'status': PENDING, b'lease_time': 300})


def test_del_work_units_all_keys_state(conn):
    prepare_one_of_each(conn)
    assert conn.count_work_units(b'ws') == (
        {AVAILABLE: 1, PENDING: 1, FINISHED: 1, FAILED: 1}, None)
    assert conn.del_work_units(b'ws', {b'work_unit_keys': [b'FA', b'xx']}) == (1, None)
    assert conn.del_work_units(b'ws', {b'work_unit_keys': [b'FI'],
                                       b'state': AVAILABLE}) == (0, None)
    assert conn.del_work_units(b'ws', {b'state': PENDING}) == (1, None)
    assert [u[0] for u in conn.get_work_units(b'ws', {})[0]] == [b'AV', b'FI']
    assert conn.del_work_units(b'ws', {b'all': True}) == (2, None)
    assert conn.get_work_units(b'ws', {}) == ([], None)


def test_del_work_units_empty_options_deletes_nothing(conn):
    prepare_one_of_each(conn)
    count, msg = conn.del_work_units(b'ws', {})
    assert count == 0
    assert as_text(msg) == 'no usable options to del_work_units'
    assert len(conn.get_work_units(b'ws', {})[0]) == 4


def test_del_work_units_unknown_spec(conn):
    count, msg = conn.del_work_units(b'nope', {b'all': True})
    assert count == 0
    assert as_text(msg) == "no such work_spec 'nope'"


def test_get_work_unit_status_shapes(conn):
    make_spec(conn)
    conn.add_work_units(b'ws', [(b'a', {}), (b'b', {b'traceback': 'tb text'})])
    before = time.time()
    statuses, msg = conn.get_work_unit_status(b'ws', [b'a', b'missing', b'b'])
    assert msg is None
    statuses = as_text(statuses)
    assert statuses[0] == {'status': AVAILABLE, 'expiration': None}
    assert statuses[1] is None
    assert statuses[2] == {'status': AVAILABLE, 'expiration': None,
                           'traceback': 'tb text'}
    conn.get_work(b'worker-1', {b'lease_time': 100})
    st = status_of(conn, b'ws', b'a')
    assert st['status'] == PENDING and st['worker_id'] == 'worker-1'
    assert before + 50 < st['expiration'] < time.time() + 150
    conn.update_work_unit(b'ws', b'a', {b'status': FINISHED})
    st = status_of(conn, b'ws', b'a')
    assert st['status'] == FINISHED and st['worker_id'] == 'worker-1'
    assert isinstance(st['expiration'], (int, float))


def test_get_work_unit_status_unknown_spec(conn):
    statuses, msg = conn.get_work_unit_status(b'nope', [b'a'])
    assert statuses is None
    assert as_text(msg) == "no such work_spec 'nope'"


class TestUpdateWorkUnit:
    """The transitions of SEMANTICS.md §5.3 as the clients use them."""

    @pytest.fixture
    def leased(self, conn):
        make_spec(conn)
        conn.add_work_units(b'ws', [(b'u', {b'orig': 1})])
        got = conn.get_work(b'w1', {b'lease_time': 60})
        assert got[0][1] == b'u'
        return conn

    def test_nothing_to_do(self, leased):
        ok, msg = leased.update_work_unit(b'ws', b'u', {b'data': {b'x': 1}})
        assert ok is False and as_text(msg) == 'nothing to do'
        assert leased.get_work_units(b'ws', {})[0] == [(b'u', {b'orig': 1})]

    def test_unknown_spec_and_key(self, leased):
        ok, msg = leased.update_work_unit(b'nope', b'u', {b'status': FINISHED})
        assert ok is False and as_text(msg) == "no such work_spec 'nope'"
        ok, msg = leased.update_work_unit(b'ws', b'missing', {b'status': FINISHED})
        assert ok is False and as_text(msg) == "no such work unit key='missing'"

    def test_finish_replaces_data(self, leased):
        assert leased.update_work_unit(
            b'ws', b'u', {b'status': FINISHED, b'data': {b'done': (1, 2)}}) \
            == (True, None)
        assert status_of(leased, b'ws', b'u')['status'] == FINISHED
        assert leased.get_work_units(b'ws', {})[0] == [(b'u', {b'done': (1, 2)})]

    def test_fail_records_traceback(self, leased):
        assert leased.update_work_unit(
            b'ws', b'u', {b'status': FAILED,
                          b'data': {b'traceback': b'boom'}}) == (True, None)
        st = status_of(leased, b'ws', b'u')
        assert st['status'] == FAILED and st['traceback'] == 'boom'

    def test_finish_wins_over_later_fail(self, leased):
        leased.update_work_unit(b'ws', b'u', {b'status': FINISHED})
        assert leased.update_work_unit(b'ws', b'u', {b'status': FAILED}) \
            == (True, None)
        assert status_of(leased, b'ws', b'u')['status'] == FINISHED

    def test_finish_after_fail_wins(self, leased):
        leased.update_work_unit(b'ws', b'u', {b'status': FAILED})
        assert leased.update_work_unit(b'ws', b'u', {b'status': FINISHED}) \
            == (True, None)
        assert status_of(leased, b'ws', b'u')['status'] == FINISHED

    def test_retry_makes_available_again(self, leased):
        leased.update_work_unit(b'ws', b'u', {b'status': FAILED,
                                              b'data': {b'traceback': b'x'}})
        assert leased.update_work_unit(b'ws', b'u', {b'lease_time': 0,
                                                     b'status': AVAILABLE}) \
            == (True, None)
        st = status_of(leased, b'ws', b'u')
        assert st['status'] == AVAILABLE and 'worker_id' not in st
        # Py keeps the modified data (SEMANTICS.md §5.4).
        assert leased.get_work(b'w2', {}) == (
            (b'ws', b'u', {b'traceback': b'x'}), None)

    def test_renew_extends_lease(self, leased):
        assert leased.update_work_unit(b'ws', b'u', {b'lease_time': 5000}) \
            == (True, None)
        st = status_of(leased, b'ws', b'u')
        assert st['status'] == PENDING
        assert st['expiration'] > time.time() + 4000

    def test_negative_lease_releases(self, leased):
        assert leased.update_work_unit(b'ws', b'u', {b'lease_time': -1}) \
            == (True, None)
        assert status_of(leased, b'ws', b'u')['status'] == AVAILABLE
        assert leased.count_work_units(b'ws') == ({AVAILABLE: 1}, None)
        assert leased.get_work(b'w2', {})[0][1] == b'u'

    def test_renew_with_data_keeps_pending(self, leased):
        assert leased.update_work_unit(b'ws', b'u', {b'lease_time': 60,
                                                     b'data': {b'step': 2}}) \
            == (True, None)
        assert status_of(leased, b'ws', b'u')['status'] == PENDING
        assert leased.get_work_units(b'ws', {})[0] == [(b'u', {b'step': 2})]

    def test_available_to_pending(self, conn):
        make_spec(conn)
        conn.add_work_units(b'ws', [(b'u', {})])
        assert conn.update_work_unit(b'ws', b'u', {b'status': PENDING,
                                                   b'lease_time': 100}) \
            == (True, None)
        assert status_of(conn, b'ws', b'u')['status'] == PENDING
        assert conn.get_work(b'w', {}) == ((None, None, None), None)


def test_readd_completed_key_makes_it_available(conn):
    make_spec(conn)
    conn.add_work_units(b'ws', [(b'u', {b'v': 1})])
    conn.update_work_unit(b'ws', b'u', {b'status': FINISHED})
    conn.add_work_units(b'ws', [(b'u', {b'v': 2})])
    assert conn.count_work_units(b'ws') == ({AVAILABLE: 1}, None)
    assert conn.get_work(b'w', {}) == ((b'ws', b'u', {b'v': 2}), None)


def test_readd_pending_key_keeps_lease_replaces_data(conn):
    make_spec(conn)
    conn.add_work_units(b'ws', [(b'u', {b'v': 1})])
    conn.get_work(b'w', {})
    conn.add_work_units(b'ws', [(b'u', {b'v': 2})])
    assert status_of(conn, b'ws', b'u')['status'] == PENDING
    assert conn.get_work_units(b'ws', {})[0] == [(b'u', {b'v': 2})]
