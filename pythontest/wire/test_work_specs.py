"""Work spec methods over the wire: PROTOCOL.md §8.1-§8.7."""

import pytest

from rpcclient import RpcError, as_text


def spec(name, **extra):
    d = {b'name': name, b'min_gb': 1, b'module': b'mod', b'run_function': b'fn'}
    d.update({k.encode(): v for k, v in extra.items()})
    return d


def test_set_and_get_work_spec_round_trips_definition(conn):
    ws = spec(b'ws1', desc='text desc', config={b'a': (1, 2), 'b': [b'x']})
    assert conn.set_work_spec(ws) == (True, None)
    assert conn.get_work_spec(b'ws1') == ws


def test_get_work_spec_unknown_is_null(conn):
    assert conn.get_work_spec(b'nope') is None


def test_byte_and_text_names_are_the_same_spec(conn):
    assert conn.set_work_spec(spec(b'same')) == (True, None)
    got = conn.get_work_spec('same')
    assert got is not None and got[b'name'] == b'same'
    # The add by text name lands in the spec created with a byte name.
    assert conn.add_work_units('same', [(b'u', {})]) == (True, None)
    assert conn.count_work_units(b'same') == ({1: 1}, None)
    specs, nxt = conn.list_work_specs({})
    assert len(specs) == 1 and nxt is None


def test_spec_name_kind_is_echoed(conn):
    conn.set_work_spec(spec(b'bytes-name'))
    conn.set_work_spec({'name': 'text-name', 'min_gb': 1})
    assert conn.get_work_spec(b'bytes-name')[b'name'] == b'bytes-name'
    got = conn.get_work_spec(b'text-name')
    assert got == {'name': 'text-name', 'min_gb': 1}
    assert isinstance(got['name'], str)


def test_module_and_run_function_come_back_as_bytes(conn):
    conn.set_work_spec({'name': 'tws', 'min_gb': 1, 'module': 'pkg.mod',
                        'run_function': 'run', 'desc': 'stays text'})
    got = conn.get_work_spec('tws')
    assert got == {'name': 'tws', 'min_gb': 1, 'module': b'pkg.mod',
                   'run_function': b'run', 'desc': 'stays text'}
    specs, _ = conn.list_work_specs({})
    assert specs[0]['module'] == b'pkg.mod'
    assert specs[0]['run_function'] == b'run'


def test_set_work_spec_replaces_definition_and_unpauses(conn):
    conn.set_work_spec(spec(b'ws', desc=b'one'))
    conn.add_work_units(b'ws', [(b'u', {})])
    assert conn.control_work_spec(b'ws', {b'status': 2}) == (True, None)
    assert conn.get_work(b'w', {b'max_jobs': 1}) == ((None, None, None), None)
    conn.set_work_spec(spec(b'ws', desc=b'two'))
    assert conn.get_work_spec(b'ws')[b'desc'] == b'two'
    meta, _ = conn.get_work_spec_meta(b'ws')
    assert as_text(meta)['status'] == 1
    # Units survive a re-set and the spec is runnable again.
    assert conn.get_work(b'w', {b'max_jobs': 1})[0][1] == b'u'


def test_set_work_spec_without_name_is_rpc_error(conn):
    with pytest.raises(RpcError) as e:
        conn.set_work_spec({b'min_gb': 1})
    assert e.value.message
    assert conn.list_work_specs({}) == ([], None)


def test_set_work_spec_with_non_string_name_is_rpc_error(conn):
    with pytest.raises(RpcError):
        conn.set_work_spec({b'name': 17, b'min_gb': 1})
    assert conn.list_work_specs({}) == ([], None)


@pytest.mark.parametrize('key,value', [
    (b'interval', b'not a number'),
    (b'weight', b'heavy'),
    (b'max_running', [1]),
])
def test_malformed_special_key_is_rpc_error_and_stores_nothing(conn, key, value):
    ws = spec(b'bad')
    ws[key] = value
    with pytest.raises(RpcError):
        conn.set_work_spec(ws)
    assert conn.get_work_spec(b'bad') is None


def test_list_work_specs_empty(conn):
    assert conn.list_work_specs({}) == ([], None)


def test_list_work_specs_sorted_with_paging(conn):
    for name in (b'c', b'a', b'b'):
        conn.set_work_spec(spec(name))
    specs, nxt = conn.list_work_specs({})
    assert [s[b'name'] for s in specs] == [b'a', b'b', b'c']
    assert nxt is None
    specs, nxt = conn.list_work_specs({b'limit': 2})
    assert [s[b'name'] for s in specs] == [b'a', b'b']
    assert as_text(nxt) == 'c'
    specs, nxt = conn.list_work_specs({b'start': b'b'})
    assert [s[b'name'] for s in specs] == [b'b', b'c']
    assert nxt is None


def test_control_work_spec_unknown(conn):
    ok, msg = conn.control_work_spec(b'nope', {b'status': 2})
    assert ok is False
    assert as_text(msg) == 'no such work spec nope'


def test_control_and_meta(conn):
    conn.set_work_spec(spec(b'ws'))
    meta, msg = conn.get_work_spec_meta(b'ws')
    assert msg is None
    assert as_text(meta) == {'status': 1, 'continuous': False,
                             'interval': None, 'max_running': None,
                             'weight': 20}
    assert conn.control_work_spec(b'ws', {b'status': 2, b'weight': 7,
                                          b'max_running': 3,
                                          b'interval': 60}) == (True, None)
    meta, _ = conn.get_work_spec_meta(b'ws')
    assert as_text(meta) == {'status': 2, 'continuous': False,
                             'interval': 60, 'max_running': 3, 'weight': 7}


def test_control_cannot_make_non_continuous_spec_continuous(conn):
    conn.set_work_spec(spec(b'ws'))
    ok, msg = conn.control_work_spec(b'ws', {b'continuous': True, b'weight': 3})
    assert ok is False
    assert as_text(msg) == 'cannot make non-continuous work spec ws continuous'
    meta, _ = conn.get_work_spec_meta(b'ws')
    assert as_text(meta)['continuous'] is False
    assert as_text(meta)['weight'] == 20  # nothing in options was applied


def test_control_continuous_spec(conn):
    conn.set_work_spec(spec(b'cs', continuous=True))
    meta, _ = conn.get_work_spec_meta(b'cs')
    assert as_text(meta)['continuous'] is True
    assert conn.control_work_spec(b'cs', {b'continuous': False}) == (True, None)
    assert as_text(conn.get_work_spec_meta(b'cs')[0])['continuous'] is False
    assert conn.control_work_spec(b'cs', {b'continuous': True}) == (True, None)
    assert as_text(conn.get_work_spec_meta(b'cs')[0])['continuous'] is True


def test_get_work_spec_meta_unknown(conn):
    meta, msg = conn.get_work_spec_meta(b'nope')
    assert meta is None
    assert as_text(msg) == 'no such work spec nope'


def test_nice_sets_default_weight(conn):
    conn.set_work_spec(spec(b'n5', nice=5))
    conn.set_work_spec(spec(b'w3', weight=3, nice=5))
    assert as_text(conn.get_work_spec_meta(b'n5')[0])['weight'] == 15
    assert as_text(conn.get_work_spec_meta(b'w3')[0])['weight'] == 3


def test_clear_returns_number_of_specs(conn):
    assert conn.clear() == 0
    for name in (b'a', b'b', b'c'):
        conn.set_work_spec(spec(name))
        conn.add_work_units(name, [(b'u', {})])
    assert conn.clear() == 3
    assert conn.list_work_specs({}) == ([], None)
    # New specs after clear are scheduled (the Py bug is not copied).
    conn.set_work_spec(spec(b'again'))
    conn.add_work_units(b'again', [(b'k', {})])
    assert conn.get_work(b'w', {})[0][:2] == (b'again', b'k')


def test_del_work_spec(conn):
    conn.set_work_spec(spec(b'ws'))
    conn.add_work_units(b'ws', [(b'u', {})])
    assert conn.del_work_spec(b'ws') == (True, None)
    assert conn.get_work_spec(b'ws') is None
    ok, msg = conn.del_work_spec(b'ws')
    assert ok is False
    assert as_text(msg) == "no such work_spec 'ws'"


def test_text_name_repr_in_message(conn):
    ok, msg = conn.del_work_spec('txt')
    assert ok is False
    assert as_text(msg) == "no such work_spec u'txt'"
