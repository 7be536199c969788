"""Run the legacy `coordinate` 0.1.5 client and its own tests against coordinated.

Python 2.7 only (the legacy package is Python 2). Two uses:

1. The package's own test modules, run unchanged from site-packages
   (coordinate/tests/test_job_client.py, test_task_master.py,
   test_job_flow.py). Their `task_master` fixture is defined at module level
   in test_job_client.py (the other two import it), where it drives an
   in-process JobQueue; a module-level fixture shadows any conftest fixture,
   so at configure time, before collection imports them, we replace the
   module attributes `task_master` and `job_queue` of
   coordinate.tests.test_job_client with ours. The files themselves are never
   changed or copied. Our `task_master` is a real TaskMaster connected over
   TCP to a coordinated daemon: TaskMaster({'address': 'host:port'}).
2. Our own pythontest/legacy/test_cli.py (the CLI and coordinate_worker).

The daemon (one per pytest session) and its address are fixtures of a plugin
object registered globally in pytest_configure, because fixtures of this
conftest file would only be visible to tests under this directory.

Tests asserting a Python-daemon quirk we deliberately do not copy are listed
in DESELECTED with the reason, and deselected by exact node id with a
visible message (see README.md).
"""
from __future__ import absolute_import, print_function

import os
import re
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import coordinated_proc  # noqa: E402

# Legacy test -> why we do not run it. Keys are "<module>::<test id>" without
# the pytest-repeat suffix. Keep in sync with README.md and docs/compat.md.
DESELECTED = {
}

# The server configuration the legacy session's daemon is started with
# (`coordinate config` must print it back).
SERVER_CONFIG_YAML = """\
pythontest:
  marker: legacy-suite
  answer: 42
"""


class CoordinatedServer(object):
    """Session-wide fixtures: the daemon and its address."""

    def __init__(self, tmpdir):
        self.tmpdir = tmpdir

    @pytest.fixture(scope='session')
    def coordinated(self):
        config = os.path.join(self.tmpdir, 'server.yaml')
        with open(config, 'w') as f:
            f.write(SERVER_CONFIG_YAML)
        daemon = coordinated_proc.Daemon(config_path=config).start()
        yield daemon
        status = daemon.stop()
        assert status == 0, ('coordinated exited with %r on SIGTERM; log:\n%s'
                             % (status, daemon.log()))

    @pytest.fixture(scope='session')
    def coordinated_address(self, coordinated):
        return coordinated.address

    @pytest.fixture(scope='session')
    def server_config_yaml(self):
        return SERVER_CONFIG_YAML


@pytest.fixture
def task_master(coordinated):
    """A TaskMaster talking to coordinated over TCP, on a cleared daemon."""
    from coordinate.job_client import TaskMaster
    # A dead daemon fails the test at once, instead of after the client's
    # five reconnect attempts.
    assert coordinated.alive(), 'coordinated died; log:\n' + coordinated.log()
    tm = TaskMaster({'address': coordinated.address})
    tm.clear()
    yield tm
    tm.clear()
    tm.close()


@pytest.fixture
def job_queue():
    """The legacy in-process server must never be what a test exercises."""
    pytest.fail('the in-process coordinate JobQueue is replaced by the '
                'coordinated daemon; use the task_master fixture')


def pytest_configure(config):
    import tempfile
    tmpdir = tempfile.mkdtemp(prefix='coordinated-legacy-')
    config.pluginmanager.register(CoordinatedServer(tmpdir),
                                  'coordinated-server')
    import coordinate.tests.test_job_client as legacy
    legacy.task_master = task_master
    legacy.job_queue = job_queue


_REPEAT_SUFFIX = re.compile(r'\[(?:(.*)-)?\d+-\d+\]$')


def base_test_id(item):
    """'<module>::<test id>' of an item, without pytest-repeat's suffix."""
    name = item.name
    params = getattr(getattr(item, 'callspec', None), 'params', {})
    if '__pytest_repeat_step_number' in params:
        name = _REPEAT_SUFFIX.sub(
            lambda m: '[%s]' % m.group(1) if m.group(1) else '', name)
    return '%s::%s' % (item.module.__name__, name)


def pytest_collection_modifyitems(config, items):
    if not DESELECTED:
        return
    keep, dropped = [], []
    for item in items:
        (dropped if base_test_id(item) in DESELECTED else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
        reporter = config.pluginmanager.getplugin('terminalreporter')
        for tid in sorted(set(base_test_id(item) for item in dropped)):
            line = 'DESELECTED %s: %s' % (tid, DESELECTED[tid])
            if reporter is not None:
                reporter.write_line(line, yellow=True)
            else:
                print(line, file=sys.stderr)
