"""Go and Python workers on one queue, end to end through coordinated.

Python 2.7: a real `coordinate_worker` (coordinate 0.1.5) and the example
Go worker (examples/worker, built by scripts/pythontest.sh into
$GO_WORKER_BIN) run against the session's daemon on specs of both
runtimes: each unit is done once, by its runtime, and a flow crosses from a
Python spec to a Go spec and back.
"""
from __future__ import absolute_import, print_function

import os
import signal
import subprocess
import sys
import time

import pytest

from coordinate.constants import FINISHED

from worker_setup import fork_worker_config, worker_env

BIN = os.path.dirname(sys.executable)

# Bounds on waiting (never pass conditions).
FINISH_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0
N = 6


@pytest.fixture
def tm(task_master):
    """conftest.py's task_master: a TaskMaster on a cleared daemon."""
    return task_master


def go_worker_bin():
    path = os.environ.get('GO_WORKER_BIN')
    if not path or not os.access(path, os.X_OK):
        pytest.fail('GO_WORKER_BIN=%r is not an executable (scripts/pythontest.sh '
                    'builds examples/worker)' % path)
    return path


def stop(proc, name, log):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    deadline = time.time() + STOP_TIMEOUT
    while proc.poll() is None and time.time() < deadline:
        time.sleep(0.1)
    if proc.poll() is None:
        proc.kill()
        proc.wait()
        pytest.fail('%s did not stop within %.0fs of SIGTERM:\n%s'
                    % (name, STOP_TIMEOUT, log.read()))
    assert proc.returncode == 0, '%s exited %r:\n%s' % (name, proc.returncode, log.read())


def test_go_and_python_workers_share_a_queue(tm, tmpdir, coordinated_address):
    py = {'min_gb': 1, 'module': 'go_flow_tasks'}
    specs = [
        dict(py, name='py_a', run_function='run_a', then='go_b'),
        {'name': 'go_b', 'min_gb': 1, 'runtime': 'go', 'task': 'shout', 'then': 'py_c'},
        dict(py, name='py_c', run_function='run_c'),
        {'name': 'sum', 'min_gb': 1, 'runtime': 'go'},
        dict(py, name='py_solo', run_function='run_solo'),
    ]
    for spec in specs:
        tm.set_work_spec(spec)
    keys = ['u%02d' % i for i in range(N)]
    tm.add_work_units('py_a', [(k, {'i': i}) for i, k in enumerate(keys)])
    tm.add_work_units('sum', [(k, {'numbers': [i, 1.5]}) for i, k in enumerate(keys)])
    tm.add_work_units('py_solo', [(k, {'i': i}) for i, k in enumerate(keys)])

    config = fork_worker_config(tmpdir, coordinated_address)
    env = worker_env()
    py_log, go_log = tmpdir.join('py-worker.log'), tmpdir.join('go-worker.log')
    with open(str(py_log), 'wb') as pyf, open(str(go_log), 'wb') as gof:
        py_proc = subprocess.Popen(
            [os.path.join(BIN, 'coordinate_worker'), '-c', str(config), '--foreground'],
            stdout=pyf, stderr=subprocess.STDOUT, env=env, cwd=str(tmpdir))
        go_proc = subprocess.Popen(
            [go_worker_bin(), '-address', coordinated_address, '-concurrency', '2',
             '-max-jobs', '2', '-idle-max', '500ms'],
            stdout=gof, stderr=subprocess.STDOUT, cwd=str(tmpdir))
        try:
            done = {FINISHED: N}
            deadline = time.time() + FINISH_TIMEOUT
            go_seen = False
            while time.time() < deadline and py_proc.poll() is None and go_proc.poll() is None:
                for wid in tm.workers():
                    hb = tm.get_heartbeat(wid) or {}
                    if hb.get('runtime') == 'go' and hb.get('pid') == go_proc.pid:
                        go_seen = True
                if all(tm.count_work_units(s['name']) == done for s in specs):
                    break
                time.sleep(0.2)
            logs = 'python worker:\n%s\ngo worker:\n%s' % (py_log.read(), go_log.read())
            assert py_proc.poll() is None and go_proc.poll() is None, 'a worker exited early:\n' + logs
            for s in specs:
                assert tm.count_work_units(s['name']) == done, (s['name'], logs)
            assert go_seen, 'the Go worker was never listed with its pid:\n' + logs
        finally:
            stop(go_proc, 'the Go worker', go_log)
            stop(py_proc, 'coordinate_worker', py_log)

    def units(name):
        return dict(tm.get_work_units(name))

    for name in ('py_a', 'py_c', 'py_solo'):
        assert set(u['done_by'] for u in units(name).values()) == set(['python']), units(name)
    for name in ('go_b', 'sum'):
        assert set(u['done_by'] for u in units(name).values()) == set(['go']), units(name)
    assert units('go_b')['u03-b']['shouted'] == 'HELLO U03!'
    assert units('py_c')['u03-b-next']['heard'] == 'HELLO U03!'
    assert units('sum')['u04']['sum'] == 5.5
    assert tm.workers() == {}, 'workers still registered after stopping'
