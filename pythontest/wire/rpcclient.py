"""A minimal CBOR-RPC client that frames requests like the Python 2 client.

PROTOCOL.md §2-§5: every request is a map with byte-string keys b'id',
b'method', b'params' (params a plain array), CBOR-encoded and wrapped in
tag 24 around a byte string. Python 2 tuples travel as tag 128, UUIDs as
tag 37.

Mapping between Python 3 values and CBOR used throughout the suite:

  bytes <-> byte string      str <-> text string
  list  <-> plain array      tuple <-> tag 128 (a "Python 2 tuple")
  uuid.UUID <-> tag 37       dict <-> map (keys keep their CBOR type)

Because list != tuple in Python, comparing a decoded value with an expected
one checks tuple-versus-array exactly. Any other tag is decoded as a
cbor2.CBORTag, so a test comparing against plain values fails loudly if the
server emits a tag it must not (PROTOCOL.md §2.2).
"""

import socket

import cbor2

TAG_ENCODED_CBOR = 24
TAG_TUPLE = 128

# Seconds a test waits for one reply before failing (never a pass condition).
DEFAULT_TIMEOUT = 30.0


class RpcError(Exception):
    """The server answered with an error map (PROTOCOL.md §3.3)."""

    def __init__(self, message, response):
        super().__init__(message)
        self.message = message
        self.response = response


def to_wire(value):
    """Prepare a Python value for cbor2: tuples become tag 128."""
    if isinstance(value, tuple):
        return cbor2.CBORTag(TAG_TUPLE, [to_wire(v) for v in value])
    if isinstance(value, list):
        return [to_wire(v) for v in value]
    if isinstance(value, dict):
        return {k: to_wire(v) for k, v in value.items()}
    return value


def _tag_hook(decoder, tag):
    if tag.tag == TAG_TUPLE:
        if not isinstance(tag.value, (list, tuple)):
            return tag
        return tuple(tag.value)
    return tag


def encode(value):
    """CBOR-encode a Python value with the mapping of this module."""
    return cbor2.dumps(to_wire(value))


def decode(data):
    """Decode one complete CBOR item with the mapping of this module."""
    return cbor2.loads(data, tag_hook=_tag_hook)


def wrap(item_bytes):
    """Wrap encoded CBOR in tag 24 (PROTOCOL.md §2.1)."""
    return cbor2.dumps(cbor2.CBORTag(TAG_ENCODED_CBOR, item_bytes))


def frame(message):
    """A complete tag-24 frame for a request (or any) map."""
    return wrap(encode(message))


def request(method, params, id=1):
    """A request map exactly as the Python 2 client builds it."""
    if isinstance(method, str):
        method = method.encode('utf-8')
    return {b'id': id, b'method': method, b'params': list(params)}


class Connection:
    """One TCP connection to the daemon, with raw and RPC-level helpers."""

    def __init__(self, address, timeout=DEFAULT_TIMEOUT):
        host, port = address.rsplit(':', 1)
        self.sock = socket.create_connection((host, int(port)), timeout)
        self.rfile = self.sock.makefile('rb')
        self.next_id = 1

    def close(self):
        try:
            self.rfile.close()
        finally:
            self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def read_item(self):
        """Read exactly one CBOR item from the stream, undecoded tags intact.

        Raises EOFError when the server closed the connection.
        """
        try:
            return cbor2.CBORDecoder(self.rfile, tag_hook=_tag_hook).decode()
        except cbor2.CBORDecodeEOF as e:
            raise EOFError('server closed the connection') from e

    def read_response(self):
        """Read one response frame; unwrap tag 24 and decode the map.

        Fails (AssertionError) if the frame is not tag 24 around a byte
        string, which PROTOCOL.md §2.2 says every response uses.
        """
        item = self.read_item()
        assert isinstance(item, cbor2.CBORTag), (
            'response not wrapped in tag 24: %r' % (item,))
        assert item.tag == TAG_ENCODED_CBOR, 'response tag %d' % item.tag
        assert isinstance(item.value, bytes), 'tag 24 around %r' % item.value
        return decode(item.value)

    def send_request(self, method, params, id=None):
        if id is None:
            id = self.next_id
            self.next_id += 1
        self.send_raw(frame(request(method, params, id)))
        return id

    def call_response(self, method, *params):
        """Call and return the whole response map (checking the id)."""
        id = self.send_request(method, params)
        resp = self.read_response()
        assert resp.get(b'id') == id, 'reply id %r for request id %r' % (
            resp.get(b'id'), id)
        return resp

    def call(self, method, *params):
        """Call `method(*params)`; return the result or raise RpcError."""
        resp = self.call_response(method, *params)
        if b'error' in resp:
            err = resp[b'error']
            message = err.get(b'message') if isinstance(err, dict) else err
            raise RpcError(message, resp)
        assert b'result' in resp, 'response has neither result nor error: %r' % (
            resp,)
        return resp[b'result']

    def __getattr__(self, name):
        """conn.get_work(...) is conn.call('get_work', ...)."""
        if name.startswith('_'):
            raise AttributeError(name)
        return lambda *params: self.call(name, *params)


def as_text(value):
    """Recursively turn byte strings into text, for server-generated strings.

    PROTOCOL.md §5.3 lets server-generated strings (messages, status-dict
    keys) be byte or text strings; tests compare those through this.
    Tuples stay tuples and lists stay lists.
    """
    if isinstance(value, bytes):
        return value.decode('utf-8')
    if isinstance(value, tuple):
        return tuple(as_text(v) for v in value)
    if isinstance(value, list):
        return [as_text(v) for v in value]
    if isinstance(value, dict):
        return {as_text(k): as_text(v) for k, v in value.items()}
    return value
