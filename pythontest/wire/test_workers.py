"""Worker methods over the wire: PROTOCOL.md §8.17-§8.23.

`clear` does not remove workers, so every test uses fresh worker ids and
modes and asserts only about its own workers (or about differences).
"""

import time
import uuid

import pytest

from rpcclient import as_text

FINISHED = 4


def new_id(prefix):
    return ('%s-%s' % (prefix, uuid.uuid4().hex)).encode()


ENV = {b'hostname': b'host', b'pid': 4242, b'memory': (1.0, 2.0, 3),
       b'aliases': (), b'working_set': [(b'pkg', b'1.0')]}


def test_heartbeat_info_and_unregister(conn):
    wid = new_id('w')
    assert conn.worker_heartbeat(wid, b'RUN', 6000, ENV, None) == (True, None)
    info, msg = conn.get_worker_info(wid)
    assert msg is None
    age = info.pop(b'age_seconds', None)
    if age is None:
        age = info.pop('age_seconds')
    assert isinstance(age, (int, float)) and 0 <= age < 3600
    assert info == ENV
    modes, msg = conn.list_worker_modes()
    assert msg is None and modes[wid] == b'RUN'
    assert conn.worker_unregister(wid) == (True, None)
    assert conn.get_worker_info(wid) == (None, None)
    assert wid not in conn.list_worker_modes()[0]
    ok, msg = conn.worker_unregister(wid)
    assert ok is False
    assert as_text(msg) == "no worker '%s'" % wid.decode()


def test_heartbeat_warnings(conn):
    wid = new_id('neg')
    ok, msg = conn.worker_heartbeat(wid, None, -5, None, None)
    assert ok is True
    assert as_text(msg) == 'negative expire time -5 defaulted to 5 minutes'
    ok, msg = conn.worker_heartbeat(wid, None, 100000, None, None)
    assert ok is True
    assert as_text(msg) == 'huge expire time 100000 defaulted to one hour'
    assert conn.list_worker_modes()[0][wid] is None
    conn.worker_unregister(wid)


def test_get_worker_info_unknown(conn):
    assert conn.get_worker_info(new_id('ghost')) == (None, None)


def test_mode_counts(conn):
    mode = new_id('MODE')
    ids = [new_id('m') for _ in range(3)]
    for wid in ids:
        conn.worker_heartbeat(wid, mode, 6000, {}, None)
    counts, msg = conn.mode_counts()
    assert msg is None and counts[mode] == 3
    conn.worker_unregister(ids[0])
    assert conn.mode_counts()[0][mode] == 2
    for wid in ids[1:]:
        conn.worker_unregister(wid)
    assert mode not in conn.mode_counts()[0]


def test_worker_stats_counts_live_workers(conn):
    def stats():
        s = as_text(conn.worker_stats())
        assert set(s) == {'num_workers', 'num_children', 'num_expirable'}
        assert all(type(v) is int for v in s.values())
        return s

    before = stats()
    parent, child = new_id('p'), new_id('c')
    conn.worker_heartbeat(parent, b'RUN', 6000, {}, None)
    conn.worker_heartbeat(child, b'RUN', 6000, {}, parent)
    after = stats()
    assert after['num_workers'] == before['num_workers'] + 2
    assert after['num_expirable'] == before['num_expirable'] + 2
    assert after['num_children'] >= before['num_children'] + 1
    conn.worker_unregister(child)
    conn.worker_unregister(parent)
    assert stats()['num_workers'] == before['num_workers']


class TestChildren:

    @pytest.fixture
    def family(self, conn):
        parent, child = new_id('parent'), new_id('child')
        conn.worker_heartbeat(parent, b'RUN', 6000, {}, None)
        conn.worker_heartbeat(child, b'RUN', 6000, {b'pid': 1}, parent)
        conn.set_work_spec({b'name': b'ws', b'min_gb': 1})
        conn.add_work_units(b'ws', [(b'a', {b'd': 1}), (b'b', {})])
        yield conn, parent, child
        conn.worker_unregister(child)
        conn.worker_unregister(parent)

    def test_unknown_parent(self, conn):
        assert conn.get_child_work_units(new_id('nobody')) == ({}, None)

    def test_outstanding_units_listed_until_finished(self, family):
        conn, parent, child = family
        # A live child with nothing outstanding maps to [] (Py).
        assert conn.get_child_work_units(parent) == ({child: []}, None)
        got, _ = conn.get_work(child, {b'max_jobs': 2, b'lease_time': 300})
        assert len(got) == 2
        children, msg = conn.get_child_work_units(parent)
        assert msg is None and list(children) == [child]
        entries = sorted(as_text(children[child]),
                         key=lambda e: e['work_unit_key'])
        assert [e['work_unit_key'] for e in entries] == ['a', 'b']
        a = entries[0]
        assert a['work_spec_name'] == 'ws'
        assert a['work_unit_data'] == {'d': 1}
        assert a['worker_id'] == child.decode()
        assert isinstance(a['expires'], (int, float))
        conn.update_work_unit(b'ws', b'a', {b'status': FINISHED})
        children, _ = conn.get_child_work_units(parent)
        assert [as_text(e)['work_unit_key'] for e in children[child]] == ['b']
        conn.update_work_unit(b'ws', b'b', {b'status': FINISHED})
        assert conn.get_child_work_units(parent) == ({child: []}, None)

    def test_released_unit_stays_listed_under_the_child(self, family):
        conn, parent, child = family
        conn.get_work(child, {b'max_jobs': 1})
        conn.update_work_unit(b'ws', b'a', {b'lease_time': -1})
        children, _ = conn.get_child_work_units(parent)
        entries = [as_text(e) for e in children[child]]
        assert [e['work_unit_key'] for e in entries] == ['a']
        # Held by nobody: reported as the child's, with the past time the
        # lease time gave (now - 1 s), as the Python daemon did until its
        # sweep, so the fork worker fails it (docs/compat.md).
        assert entries[0]['worker_id'] == child.decode()
        assert isinstance(entries[0]['expires'], float)
        assert time.time() - 30 < entries[0]['expires'] < time.time()
        # Re-leased to another worker: still listed, showing the new holder.
        other = new_id('other')
        assert conn.get_work(other, {})[0][1] == b'a'
        entries = [as_text(e) for e in conn.get_child_work_units(parent)[0][child]]
        assert entries[0]['worker_id'] == other.decode()

    def test_unit_given_back_with_a_status_has_no_worker(self, family):
        conn, parent, child = family
        conn.get_work(child, {b'max_jobs': 1})
        conn.update_work_unit(b'ws', b'a', {b'status': 1})
        entries = [as_text(e) for e in conn.get_child_work_units(parent)[0][child]]
        assert [e['work_unit_key'] for e in entries] == ['a']
        # As in Python: no worker and no time, so the fork worker does not
        # fail a unit an operator retried.
        assert entries[0]['worker_id'] is None
        assert entries[0]['expires'] is None

    def test_reparenting_moves_child(self, family):
        conn, parent, child = family
        conn.get_work(child, {})
        parent2 = new_id('parent2')
        conn.worker_heartbeat(parent2, b'RUN', 6000, {}, None)
        conn.worker_heartbeat(child, b'RUN', 6000, {}, parent2)
        assert child not in conn.get_child_work_units(parent)[0]
        assert len(conn.get_child_work_units(parent2)[0][child]) == 1
        conn.worker_unregister(parent2)
