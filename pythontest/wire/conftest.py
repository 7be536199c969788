"""Fixtures for the wire suite: one coordinated daemon per session.

The daemon is started from pythontest/coordinated_proc.py (binary from
$COORDINATED_BIN, backend from $COORDINATED_BACKEND) with the YAML file
CONFIG_YAML given by -config, and stopped with SIGTERM at the end. Every
test gets a fresh connection on a cleared daemon.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import coordinated_proc  # noqa: E402
import rpcclient  # noqa: E402

# The server configuration handed to the daemon; get_config must return it.
# Its retention policy (SEMANTICS §12) only acts when `archive` is called,
# which only test_archive_* does.
CONFIG_YAML = """\
coordinate:
  job_queue:
    limit_completed_count: 1
pythontest:
  marker: wire-suite
  numbers: [1, 2.5, 3]
  nested:
    flag: true
    empty: null
"""


@pytest.fixture(scope='session')
def config_file(tmp_path_factory):
    path = tmp_path_factory.mktemp('config') / 'coordinated.yaml'
    path.write_text(CONFIG_YAML)
    return str(path)


@pytest.fixture(scope='session')
def daemon(config_file):
    d = coordinated_proc.Daemon(config_path=config_file).start()
    yield d
    status = d.stop()
    assert status == 0, 'coordinated exited with %r on SIGTERM; log:\n%s' % (
        status, d.log())


@pytest.fixture
def address(daemon):
    assert daemon.alive(), 'daemon died; log:\n%s' % daemon.log()
    return daemon.address


@pytest.fixture
def connect(address):
    """A factory of connections to the session daemon, closed at teardown."""
    opened = []

    def factory():
        c = rpcclient.Connection(address)
        opened.append(c)
        return c

    yield factory
    for c in opened:
        c.close()


@pytest.fixture
def conn(connect):
    """A connection to a daemon holding no work specs (cleared before)."""
    c = connect()
    c.call('clear')
    return c
