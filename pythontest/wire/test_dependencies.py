"""Work-unit dependencies and groups over the wire (docs/dependencies.md).

An extension: units name what they wait for in the `depends_on` key of
their add_work_units metadata and may join a `group`; group_status and
cancel_group are new methods. Legacy clients are undisturbed: a waiting unit
reports the legacy BLOCKED status (2) and a `depends_on` list.
"""

import pytest

from rpcclient import RpcError

AVAILABLE, BLOCKED, PENDING, FINISHED, FAILED = 1, 2, 3, 4, 5
NO_WORK = ((None, None, None), None)


def make_spec(conn, name):
    assert conn.set_work_spec({b'name': name, b'min_gb': 1}) == (True, None)


def meta(*deps, group=b'build'):
    return {b'group': group, b'depends_on': [list(d) for d in deps]}


def status(conn, spec, key):
    (st,), msg = conn.get_work_unit_status(spec, [key])
    assert msg is None
    return st


def finish(conn, spec, key, **data):
    assert conn.update_work_unit(spec, key, {b'status': FINISHED, b'data': data}) == (True, None)


def test_diamond_runs_in_dependency_order(conn):
    # compile after fetch; test and lint after compile; package after both.
    make_spec(conn, b'ci')
    make_spec(conn, b'pkg')
    assert conn.add_work_units(b'ci', [
        (b'fetch', {}, {b'group': b'build'}),
        (b'compile', {}, meta((b'ci', b'fetch'))),
        (b'test', {}, meta((b'ci', b'compile'))),
        (b'lint', {}, meta((b'ci', b'compile'))),
    ]) == (True, None)
    assert conn.add_work_units(b'pkg', [
        (b'deb', {}, meta((b'ci', b'test'), (b'ci', b'lint'))),
    ]) == (True, None)

    st = status(conn, b'pkg', b'deb')
    assert st[b'status'] == BLOCKED
    assert st[b'depends_on'] == [(b'ci', b'lint'), (b'ci', b'test')] or \
        st[b'depends_on'] == [(b'ci', b'test'), (b'ci', b'lint')]
    assert conn.count_work_units(b'ci') == ({AVAILABLE: 1, BLOCKED: 3}, None)

    order = []
    while True:
        got = conn.get_work(b'w', {b'lease_time': 60})
        if got == NO_WORK:
            break
        (spec, key, _), _ = got
        order.append(key)
        finish(conn, spec, key)
    assert order[0] == b'fetch' and order[1] == b'compile'
    assert sorted(order[2:4]) == [b'lint', b'test']
    assert order[4:] == [b'deb']

    (group, msg) = conn.call('group_status', b'build')
    assert msg is None
    assert group[b'counts'] == {FINISHED: 5}
    assert group[b'complete'] is True and group[b'stalled'] is False


def test_dependency_on_a_unit_added_later(conn):
    make_spec(conn, b'ws')
    conn.add_work_units(b'ws', [(b'late-user', {}, meta((b'ws', b'late')))])
    assert status(conn, b'ws', b'late-user')[b'status'] == BLOCKED
    conn.add_work_units(b'ws', [(b'late', {})])
    assert conn.get_work(b'w', {}) == ((b'ws', b'late', {}), None)
    finish(conn, b'ws', b'late')
    assert conn.get_work(b'w', {}) == ((b'ws', b'late-user', {}), None)


def test_failure_propagates_and_retry_reblocks(conn):
    make_spec(conn, b'ws')
    conn.add_work_units(b'ws', [
        (b'a', {}),
        (b'b', {}, meta((b'ws', b'a'))),
        (b'c', {}, meta((b'ws', b'b'))),
    ])
    assert conn.get_work(b'w', {}) == ((b'ws', b'a', {}), None)
    assert conn.update_work_unit(b'ws', b'a', {b'status': FAILED,
                                               b'data': {b'traceback': b'boom'}}) == (True, None)
    for key in (b'b', b'c'):
        st = status(conn, b'ws', key)
        assert st[b'status'] == FAILED
        # Every dependent names the root cause, however deep it sits.
        assert st[b'traceback'] == 'dependency ws/a failed'
    # The legacy retry of the root puts its dependents back to waiting.
    assert conn.update_work_unit(b'ws', b'a', {b'lease_time': 0, b'status': AVAILABLE}) == (True, None)
    assert status(conn, b'ws', b'b')[b'status'] == BLOCKED
    assert status(conn, b'ws', b'c')[b'status'] == BLOCKED
    assert status(conn, b'ws', b'a')[b'status'] == AVAILABLE


def test_cycle_is_rejected_and_adds_nothing(conn):
    make_spec(conn, b'ws')
    conn.add_work_units(b'ws', [(b'x', {}, meta((b'ws', b'y')))])
    with pytest.raises(RpcError) as err:
        conn.add_work_units(b'ws', [(b'y', {}, meta((b'ws', b'x')))])
    assert b'dependency cycle: ws/y -> ws/x -> ws/y' in err.value.message
    assert conn.get_work_units(b'ws', {b'work_unit_keys': [b'y']}) == ([(b'y', None)], None)


def test_cancel_group_fails_unfinished_units(conn):
    make_spec(conn, b'ws')
    conn.add_work_units(b'ws', [
        (b'one', {}, {b'group': b'g'}),
        (b'two', {}, meta((b'ws', b'one'), group=b'g')),
        (b'other', {}),
    ])
    assert conn.call('cancel_group', b'g') == (2, None)
    assert status(conn, b'ws', b'one')[b'status'] == FAILED
    assert status(conn, b'ws', b'two')[b'status'] == FAILED
    assert status(conn, b'ws', b'other')[b'status'] == AVAILABLE
    group, _ = conn.call('group_status', b'g')
    assert group[b'counts'] == {FAILED: 2} and group[b'complete'] is True
