"""get_config, archive, the lock service, now, and refused methods.

PROTOCOL.md §8.8, §8.24-§8.26.
"""

import time

import pytest

from rpcclient import RpcError, as_text


def test_get_config_returns_the_config_file(conn):
    config, msg = conn.get_config()
    assert msg is None
    assert as_text(config) == {
        'coordinate': {'job_queue': {'limit_completed_count': 1}},
        'pythontest': {'marker': 'wire-suite', 'numbers': [1, 2.5, 3],
                       'nested': {'flag': True, 'empty': None}}}


def finish_and_fail(conn, spec, finished, failed):
    conn.set_work_spec({b'name': spec, b'min_gb': 1})
    conn.add_work_units(spec, [(k, {}) for k in finished + failed])
    for k in finished:
        assert conn.update_work_unit(spec, k, {b'status': 4}) == (True, None)
    for k in failed:
        assert conn.update_work_unit(spec, k, {b'status': 5}) == (True, None)


def test_archive_returns_result_null_and_applies_retention(conn):
    # The session daemon keeps limit_completed_count: 1 (conftest.py).
    finish_and_fail(conn, b'ws1', [b'a', b'b', b'c'], [b'x', b'y'])
    finish_and_fail(conn, b'ws2', [b'a', b'b'], [])
    resp = conn.call_response('archive', {b'work_spec_names': [b'ws1', b'nope']})
    assert b'error' not in resp
    assert b'result' in resp and resp[b'result'] is None
    # Archived units still count, but are otherwise gone.
    assert conn.count_work_units(b'ws1') == ({4: 3, 5: 2}, None)
    kept = [k for k, _ in conn.get_work_units(b'ws1', {})[0]]
    assert len(kept) == 2
    statuses = as_text(conn.get_work_unit_status(
        b'ws1', [b'a', b'b', b'c', b'x', b'y'])[0])
    assert sorted(s['status'] for s in statuses if s is not None) == [4, 5]
    assert statuses.count(None) == 3
    # Specs not named are untouched until archive() without options.
    assert len(conn.get_work_units(b'ws2', {})[0]) == 2
    for params in ((), ({},)):
        resp = conn.call_response('archive', *params)
        assert b'result' in resp and resp[b'result'] is None
    assert len(conn.get_work_units(b'ws2', {})[0]) == 1
    assert conn.count_work_units(b'ws2') == ({4: 2}, None)
    # Deleting by state counts (and resets) the archived units too.
    assert conn.del_work_units(b'ws1', {b'state': 4}) == (3, None)
    assert conn.count_work_units(b'ws1') == ({5: 2}, None)
    assert conn.del_work_units(b'ws1', {b'all': True}) == (2, None)
    assert conn.count_work_units(b'ws1') == ({}, None)


def test_now_is_server_unix_time(conn):
    now = conn.now()
    assert type(now) is int
    assert abs(now - time.time()) < 600


def norm_path(p):
    return None if p is None else [as_text(label) for label in p]


def test_lock_service(conn):
    ab, a, c = [b'ns', b'a', b'b'], [b'ns', b'a'], [b'ns', b'c']
    assert conn.lock(b'L1', 30, [ab]) == (True, None)
    # A prefix of a locked path cannot be locked, nor can an extension.
    ok, msg = conn.lock(b'L2', 30, [a])
    assert ok is False and 'not lockable' in as_text(msg)
    ok, msg = conn.lock(b'L2', 30, [ab + [b'x']])
    assert ok is False
    got, msg = conn.locksome(b'L2', 30, [ab, c])
    assert msg is None
    assert [norm_path(p) for p in got] == [None, ['ns', 'c']]
    assert as_text(conn.readlock([ab, c, [b'free']])) == ['L1', 'L2', None]
    assert conn.readlock([]) == []
    ok, msg = conn.renew(b'L2', 30, [ab])
    assert ok is False and 'held by' in as_text(msg)
    assert conn.renew(b'L1', 30, [ab]) == (True, None)
    ok, msg = conn.unlock(b'L2', [ab])
    assert ok is False
    assert conn.unlock(b'L1', [ab]) == (True, None)
    ok, msg = conn.unlock(b'L1', [ab])
    assert ok is False and 'not held' in as_text(msg)
    assert conn.delete_namespace(b'ns') == 0
    assert conn.readlock([ab, c]) == [None, None]


@pytest.mark.parametrize('method', [
    'no_such_method', 'snapshot', 'maybe_periodic_snapshot', 'load_snapshot',
    'wsgi', '_private', 'GetWork'])
def test_unknown_and_refused_methods_are_errors(conn, method):
    with pytest.raises(RpcError) as e:
        conn.call(method)
    assert e.value.message
    assert b'result' not in e.value.response
    # The connection stays usable.
    assert conn.list_work_specs({}) == ([], None)


def test_extra_params_are_an_error(conn):
    with pytest.raises(RpcError):
        conn.call('clear', 1, 2)
    with pytest.raises(RpcError):
        conn.call('get_work_spec', b'a', b'b')


def test_missing_required_params_are_an_error(conn):
    with pytest.raises(RpcError):
        conn.call('get_work_spec')
