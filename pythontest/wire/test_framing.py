"""Framing, envelope and hostile input: PROTOCOL.md §2-§4, §9, DECISIONS 6-7."""

import socket

import cbor2
import pytest

import coordinated_proc
import rpcclient
from rpcclient import Connection, decode, encode, frame, request, wrap

# Seconds to wait for the server to close a connection it must close.
CLOSE_TIMEOUT = 15.0


def assert_closed(c, allow_error_reply=False):
    """The server closes `c` (after at most one error reply if allowed)."""
    c.sock.settimeout(CLOSE_TIMEOUT)
    replies = 0
    while True:
        try:
            item = c.read_item()
        except (EOFError, ConnectionError):
            return
        except socket.timeout:
            pytest.fail('server neither replied nor closed within %.0fs'
                        % CLOSE_TIMEOUT)
        replies += 1
        assert allow_error_reply and replies == 1, (
            'unexpected reply before close: %r' % (item,))
        assert b'error' in decode(item.value), item


def closed_or_error(c):
    """The server either closes `c` or answers with an error reply."""
    c.sock.settimeout(CLOSE_TIMEOUT)
    try:
        item = c.read_item()
    except (EOFError, ConnectionError):
        return 'closed'
    resp = decode(item.value)
    assert b'error' in resp, resp
    return 'error'


def still_serving(address, *old):
    """Connections opened before, and a new one, still work."""
    def check(c):
        specs, nxt = c.list_work_specs({})
        assert type(specs) is list and nxt is None

    for c in old:
        check(c)
    with Connection(address) as fresh:
        check(fresh)


def test_exact_example_9_1(conn):
    raw = bytes.fromhex(
        'D8 18 58 25 A3 42 69 64 01 46 6D 65 74 68 6F 64'
        ' 4F 6C 69 73 74 5F 77 6F 72 6B 5F 73 70 65 63 73'
        ' 46 70 61 72 61 6D 73 81 A0')
    assert len(raw) == 41
    conn.send_raw(raw)
    item = conn.read_item()
    assert item.tag == 24 and isinstance(item.value, bytes)
    assert decode(item.value) == {b'id': 1, b'result': ([], None)}
    # Envelope keys are byte strings like Py's (PROTOCOL §5.3).
    assert all(type(k) is bytes for k in decode(item.value))


def test_exact_example_9_2_no_work(conn):
    raw = bytes.fromhex(
        'D8 18 58 3B A3 42 69 64 07'
        ' 46 6D 65 74 68 6F 64 48 67 65 74 5F 77 6F 72 6B'
        ' 46 70 61 72 61 6D 73 82 44 39 66 33 61 A2'
        ' 4A 6C 65 61 73 65 5F 74 69 6D 65 19 03 84'
        ' 48 6D 61 78 5F 6A 6F 62 73 01')
    assert len(raw) == 63
    conn.send_raw(raw)
    assert conn.read_response() == {b'id': 7, b'result': ((None, None, None), None)}


def test_floats_are_float64_and_ints_minimal(conn):
    conn.set_work_spec({b'name': b'ws', b'min_gb': 1})
    conn.add_work_units(b'ws', [(b'u', {b'f': 7.5, b'i': 300})])
    conn.send_request('get_work_units', [b'ws', {}])
    raw = conn.read_item().value
    assert bytes.fromhex('FB 40 1E 00 00 00 00 00 00') in raw
    assert bytes.fromhex('19 01 2C') in raw


@pytest.mark.parametrize('id', [0, 7, 2 ** 40, -3, b'bytes-id', 'text-id',
                                [1, 2], 1.5])
def test_id_echoed_with_its_type(conn, id):
    conn.send_raw(frame(request('clear', [], id)))
    resp = conn.read_response()
    assert resp[b'id'] == id and type(resp[b'id']) is type(id)
    assert resp[b'result'] == 0


def test_missing_id_echoed_as_null(conn):
    conn.send_raw(frame({b'method': b'clear', b'params': []}))
    resp = conn.read_response()
    assert b'id' in resp and resp[b'id'] is None
    assert resp[b'result'] == 0


def test_error_reply_echoes_id_and_has_no_result(conn):
    conn.send_raw(frame(request('set_work_spec', [{b'min_gb': 1}], b'err-id')))
    resp = conn.read_response()
    assert resp[b'id'] == b'err-id'
    assert b'result' not in resp
    assert isinstance(resp[b'error'][b'message'], (bytes, str))


def test_text_envelope_keys_and_method(conn):
    conn.send_raw(frame({'id': 5, 'method': 'list_work_specs', 'params': [{}]}))
    assert conn.read_response() == {b'id': 5, b'result': ([], None)}


def test_unwrapped_request(conn):
    conn.send_raw(encode(request('list_work_specs', [{}], 11)))
    assert conn.read_response() == {b'id': 11, b'result': ([], None)}


def test_batch_gets_one_frame_with_responses_in_order(conn):
    batch = [cbor2.CBORTag(24, encode(request('set_work_spec',
                                              [{b'name': b'ws', b'min_gb': 1}], 1))),
             rpcclient.to_wire(request('add_work_units', [b'ws', [(b'u', {})]], 2)),
             rpcclient.to_wire(request('count_work_units', [b'ws'], 3)),
             rpcclient.to_wire(request('no_such_method', [], 4))]
    conn.send_raw(wrap(cbor2.dumps(batch)))
    responses = conn.read_response()
    assert type(responses) is list and len(responses) == 4
    assert responses[:3] == [{b'id': 1, b'result': (True, None)},
                             {b'id': 2, b'result': (True, None)},
                             {b'id': 3, b'result': ({1: 1}, None)}]
    assert responses[3][b'id'] == 4 and b'error' in responses[3]


def test_pipelining_50_requests(conn):
    conn.call('set_work_spec', {b'name': b'ws', b'min_gb': 1})
    data = b''
    for i in range(50):
        if i % 2 == 0:
            data += frame(request('add_work_units',
                                  [b'ws', [(b'k%02d' % i, {b'i': i})]], 1000 + i))
        else:
            data += frame(request('count_work_units', [b'ws'], 1000 + i))
    conn.send_raw(data)
    for i in range(50):
        resp = conn.read_response()
        assert resp[b'id'] == 1000 + i
        if i % 2 == 0:
            assert resp[b'result'] == (True, None)
        else:
            assert resp[b'result'] == ({1: i // 2 + 1}, None)


def test_null_closes_without_reply(connect, address):
    bystander = connect()
    c = connect()
    c.send_raw(b'\xf6')
    assert_closed(c)
    still_serving(address, bystander)


@pytest.mark.parametrize('garbage', [
    b'\xff\xff\xff\xff',                                  # break codes
    b'\x1c',                                              # reserved head
    b'\xd8\x18\x41\xff',                                  # undecodable inside tag 24
    b'\x05',                                              # top-level integer
    b'\x63abc',                                           # top-level text
    cbor2.dumps(cbor2.CBORTag(99, {b'id': 1})),           # unknown top-level tag
    b'\xd8\x18\x01',                                      # tag 24 around non-bytes
])
def test_malformed_frame_closes_only_that_connection(connect, address, garbage):
    bystander = connect()
    c = connect()
    c.send_raw(garbage)
    assert_closed(c)
    still_serving(address, bystander)


def test_truncated_frame_closes_connection(connect, address):
    bystander = connect()
    c = connect()
    whole = frame(request('list_work_specs', [{}], 1))
    c.send_raw(whole[:len(whole) // 2])
    c.sock.shutdown(socket.SHUT_WR)
    assert_closed(c)
    still_serving(address, bystander)


def test_huge_length_header_closes_connection(connect, address):
    bystander = connect()
    c = connect()
    # Tag 24 around a byte string claiming 2**40 bytes, far over the cap.
    c.send_raw(bytes.fromhex('D8 18 5B 00 00 01 00 00 00 00 00') + b'\xa0' * 16)
    assert_closed(c, allow_error_reply=True)
    still_serving(address, bystander)


def test_unknown_tag_inside_request_is_not_stored(connect, address):
    c = connect()
    c.call('clear')
    spec = {b'name': b'tagged', b'min_gb': 1, b'x': cbor2.CBORTag(99, 1)}
    c.send_raw(wrap(cbor2.dumps(request('set_work_spec', [spec], 1))))
    closed_or_error(c)
    with Connection(address) as fresh:
        assert fresh.get_work_spec(b'tagged') is None


@pytest.mark.parametrize('wrapped', [True, False])
def test_deep_nesting_is_refused_without_crash(connect, address, wrapped):
    bystander = connect()
    c = connect()
    deep = b'\x81' * 200000 + b'\x01'
    if wrapped:
        body = (bytes.fromhex('A3 42 69 64 01 46 6D 65 74 68 6F 64') +
                cbor2.dumps(b'get_work_spec') +
                bytes.fromhex('46 70 61 72 61 6D 73 81') + deep)
        c.send_raw(wrap(body))
    else:
        c.send_raw(deep)
    closed_or_error(c)
    still_serving(address, bystander)


@pytest.fixture(scope='module')
def small_daemon():
    """A second daemon whose request cap is 1 MiB.

    Always on the memory backend: the cap belongs to the framing layer, and
    a second daemon must not share the session daemon's database.
    """
    d = coordinated_proc.Daemon(
        extra_args=['-max-request-size', str(1 << 20)],
        backend_arg='memory').start()
    yield d
    assert d.stop() == 0, d.log()


def test_oversized_request_closes_only_that_connection(small_daemon):
    addr = small_daemon.address
    with Connection(addr) as bystander, Connection(addr) as c:
        bystander.call('clear')
        big = {b'name': b'big', b'min_gb': 1, b'blob': b'x' * (2 << 20)}
        try:
            c.send_raw(frame(request('set_work_spec', [big], 1)))
        except ConnectionError:
            pass  # the server may close before reading it all
        assert_closed(c, allow_error_reply=True)
        still_serving(addr, bystander)
        assert bystander.get_work_spec(b'big') is None
    with Connection(addr) as c:
        fits = {b'name': b'fits', b'min_gb': 1, b'blob': b'y' * (512 << 10)}
        assert c.set_work_spec(fits) == (True, None)
        assert c.get_work_spec(b'fits') == fits
        c.clear()


def test_params_as_map_are_keyword_arguments(conn):
    conn.call('set_work_spec', {b'name': b'ws', b'min_gb': 1})
    conn.send_raw(frame({b'id': 1, b'method': b'get_work_spec',
                         b'params': {b'work_spec_name': b'ws'}}))
    assert conn.read_response() == {
        b'id': 1, b'result': {b'name': b'ws', b'min_gb': 1}}


@pytest.mark.parametrize('params', [5, b'ws', None])
def test_params_neither_array_nor_map_is_error_reply(conn, params):
    conn.send_raw(frame({b'id': 2, b'method': b'get_work_spec',
                         b'params': params}))
    resp = conn.read_response()
    assert resp[b'id'] == 2 and b'result' not in resp
    message = rpcclient.as_text(resp[b'error'][b'message'])
    assert message.startswith("don't understand params:"), message
    assert conn.list_work_specs({}) == ([], None)
