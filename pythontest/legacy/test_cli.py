"""Every subcommand of the legacy `coordinate` CLI, and a real coordinate_worker.

Python 2.7: runs the installed `coordinate` and `coordinate_worker` scripts
of the coordinate 0.1.5 package as subprocesses against the session's
coordinated daemon (fixtures in conftest.py) and checks what they print and
what they did, using a TaskMaster. CLI.md says what each command sends.
"""
from __future__ import absolute_import, print_function

import ast
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from coordinate.constants import AVAILABLE, FAILED, FINISHED, PENDING

from worker_setup import fork_worker_config, worker_env

BIN = os.path.dirname(sys.executable)

# Bounds on waiting for the worker (never pass conditions).
WORKER_FINISH_TIMEOUT = 180.0
WORKER_STOP_TIMEOUT = 60.0

SPEC_YAML = """\
name: cli_spec
min_gb: 1
module: chain_tasks
run_function: run_b
desc: loaded by the CLI
"""

UNITS_JSON = """\
{"u1": {"n": 1}}
# a comment line, then a blank one

{"u2": {"n": 2}, "u3": {"n": 3}}
{"u1": {"n": 10}}
"""


@pytest.fixture
def tm(task_master):
    """conftest.py's task_master: a TaskMaster on a cleared daemon."""
    return task_master


@pytest.fixture
def client_config(tmpdir, coordinated_address):
    path = tmpdir.join('client.yaml')
    path.write('coordinate:\n  address: "%s"\n' % coordinated_address)
    return str(path)


@pytest.fixture
def cli(client_config, tmpdir):
    """cli(*args, stdin=None, rc=0) -> stdout of `coordinate -c CONFIG args`."""
    env = worker_env()

    def run(*args, **kwargs):
        expect_rc = kwargs.pop('rc', 0)
        stdin = kwargs.pop('stdin', None)
        assert not kwargs
        cmd = [os.path.join(BIN, 'coordinate'), '-c', client_config] + list(args)
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=str(tmpdir), env=env)
        out, err = proc.communicate(stdin or b'')
        assert proc.returncode == expect_rc, (
            '%r exited %d (expected %d)\nstdout:\n%s\nstderr:\n%s'
            % (args, proc.returncode, expect_rc, out, err))
        return out.decode('utf-8')
    return run


@pytest.fixture
def spec_file(tmpdir):
    path = tmpdir.join('spec.yaml')
    path.write(SPEC_YAML)
    return str(path)


@pytest.fixture
def loaded(cli, tm, spec_file, tmpdir):
    """cli_spec loaded by `coordinate load` with units u1, u2, u3."""
    units = tmpdir.join('units.json')
    units.write(UNITS_JSON)
    out = cli('load', '-w', spec_file, '-u', str(units))
    lines = out.splitlines()
    assert len(lines) == 3, out
    assert lines[0].startswith('loading work units from <open file ')
    assert lines[1] == 'pushing work units'
    assert lines[2] == "finished writing 3 work units to work_spec='cli_spec'"
    return tm


def keys_of(tm, spec, **kwargs):
    return sorted(k for k, _ in tm.get_work_units(spec, **kwargs))


def test_load(loaded):
    tm = loaded
    assert dict(tm.get_work_units('cli_spec')) == {
        u'u1': {u'n': 10}, u'u2': {u'n': 2}, u'u3': {u'n': 3}}
    spec = tm.get_work_spec('cli_spec')
    assert spec['desc'] == 'loaded by the CLI'
    assert spec['nice'] == 0
    assert tm.status('cli_spec')['num_available'] == 3


def test_load_no_work(cli, tm, spec_file):
    out = cli('load', '-w', spec_file, '--no-work')
    assert out.splitlines()[-1] == 'no work units. done.'
    assert tm.get_work_spec('cli_spec')['name'] == 'cli_spec'
    assert tm.get_work_units('cli_spec') == []


def test_addwork_with_non_ascii_key(cli, loaded, tmpdir):
    units = tmpdir.join('more.json')
    units.write_binary(b'{"k\xc3\xbc": {"t": "\xc3\xa9"}}\n{"u4": {}}\n')
    assert cli('addwork', '-W', 'cli_spec', '-u', str(units)) == ''
    data = dict(loaded.get_work_units('cli_spec'))
    assert data[u'k\xfc'] == {u't': u'\xe9'}
    assert data[u'u4'] == {}


def test_flow(cli, tm, tmpdir, coordinated_address):
    flow = tmpdir.join('flow.yaml')
    flow.write("""\
flows:
  first:
    min_gb: 1
    module: chain_tasks
    run_function: run_a
    then: second
    config:
      extra: {threads: 4}
  second:
    min_gb: 1
    module: chain_tasks
    run_function: run_b
  group:
    inner:
      min_gb: 0.5
      module: chain_tasks
      run_function: run_b
""")
    assert cli('flow', str(flow)) == ''
    names = sorted(s['name'] for s in tm.iter_work_specs())
    assert names == ['first', 'group.inner', 'second']
    first = tm.get_work_spec('first')
    assert first['then'] == 'second'
    assert first['module'] == 'chain_tasks'
    assert first['config']['extra'] == {'threads': 4}
    # Each spec carries the client's configuration tree.
    assert first['config']['coordinate']['address'] == coordinated_address
    assert tm.get_work_spec('group.inner')['min_gb'] == 0.5


def test_work_specs_and_work_spec(cli, loaded):
    loaded.set_work_spec({'name': 'another', 'min_gb': 2})
    assert cli('work_specs') == 'another\ncli_spec\n'
    as_json = json.loads(cli('work_spec', '-W', 'cli_spec', '--json'))
    assert as_json == {'name': 'cli_spec', 'min_gb': 1, 'module': 'chain_tasks',
                       'run_function': 'run_b', 'desc': 'loaded by the CLI',
                       'nice': 0}
    assert yaml.safe_load(cli('work_spec', '-W', 'cli_spec')) == as_json
    assert cli('work_spec', '-W', 'missing', '--json') == 'null\n'


def test_status(cli, loaded):
    wu = loaded.get_work('w1', available_gb=1)
    wu.fail()
    assert json.loads(cli('status', '-W', 'cli_spec')) == {
        'num_available': 2, 'num_blocked': 0, 'num_failed': 1,
        'num_finished': 0, 'num_pending': 0, 'num_tasks': 3}


def test_summary(cli, loaded):
    loaded.get_work('w1', available_gb=1)            # u1 pending
    loaded.get_work('w1', available_gb=1).finish()   # u2 finished
    lines = cli('summary').splitlines()
    assert lines[0].split() == ['Work', 'spec', 'Avail', 'Pending', 'Blocked',
                                'Failed', 'Finished', 'Total']
    assert set(lines[1]) == set('= ')
    assert lines[2].split() == ['cli_spec', '1', '1', '0', '0', '1', '3']
    assert len(lines) == 3
    as_json = json.loads(cli('summary', '--json'))
    assert as_json['cli_spec'] == {
        'num_available': 1, 'num_blocked': 0, 'num_failed': 0,
        'num_finished': 1, 'num_pending': 1, 'num_tasks': 3}
    assert abs(as_json['_NOW'] - time.time()) < 600


def test_work_units(cli, loaded):
    assert cli('work_units', '-W', 'cli_spec') == 'u1\nu2\nu3\n'
    assert cli('work_units', '-W', 'cli_spec', '-n', '2') == 'u1\nu2\n'
    wu = loaded.get_work('w1', available_gb=1)
    assert wu.key == 'u1'
    wu.data['traceback'] = 'Traceback: it broke'
    wu.fail()
    assert cli('work_units', '-W', 'cli_spec', '-s', 'failed') == 'u1\n'
    assert cli('work_units', '-W', 'cli_spec', '-s', 'available') == 'u2\nu3\n'
    assert cli('work_units', '-W', 'cli_spec', '-s', 'blocked') == ''
    details = cli('work_units', '-W', 'cli_spec', '-s', 'failed', '--details')
    head, tb = details.split('\n', 1)
    assert head.startswith("u'u1': {") and "'displayed below'" in details
    assert tb == 'Traceback: it broke\n'


def test_work_unit(cli, loaded):
    loaded.worker_heartbeat('cli-worker', 'RUN', 600,
                            {'fqdn': 'host.example', 'ipaddrs': ('10.1.2.3',)})
    wu = loaded.get_work('cli-worker', available_gb=1)
    assert wu.key == 'u1'
    out = cli('work_unit', '-W', 'cli_spec', 'u1', 'u2').splitlines()
    # The status is printed with repr(); the cbor C extension decodes every
    # integer as a Python 2 long, so it reads "3L" (as with the Python daemon).
    assert out[0] == 'u1 (%dL)' % PENDING
    assert out[1].startswith('  Expires: ')
    assert out[2] == '  Worker: cli-worker (host.example on 10.1.2.3)'
    assert out[3] == 'u2 (%dL)' % AVAILABLE
    wu.data['traceback'] = 'line one\nline two'
    wu.fail()
    out = cli('work_unit', '-W', 'cli_spec', 'u1').splitlines()
    assert out[0] == 'u1 (%dL)' % FAILED
    assert out[-3:] == ['  Traceback:', 'line one', 'line two']
    loaded.worker_unregister('cli-worker')


def test_retry(cli, loaded):
    assert cli('retry', '-W', 'cli_spec', '-a') == 'Nothing to do.\n'
    for _ in range(3):
        loaded.get_work('w1', available_gb=1).fail()
    assert loaded.status('cli_spec')['num_failed'] == 3
    assert cli('retry', '-W', 'cli_spec', 'u2') == 'Retried 1 work unit.\n'
    assert keys_of(loaded, 'cli_spec', state=FAILED) == ['u1', 'u3']
    assert cli('retry', '-W', 'cli_spec', '-a') == 'Retried 2 work units.\n'
    assert loaded.status('cli_spec')['num_available'] == 3
    assert cli('retry', '-W', 'cli_spec', '-a') == 'Nothing to do.\n'


def test_pause_resume(cli, loaded):
    assert cli('pause', 'cli_spec') == ''
    assert loaded.get_work('w1', available_gb=1) is None
    assert cli('resume', 'cli_spec') == ''
    assert loaded.get_work('w1', available_gb=1).key == 'u1'
    # An unknown spec is silently ignored.
    assert cli('pause', 'no_such_spec') == ''


def test_prioritize(cli, loaded):
    assert cli('prioritize', 'cli_spec', 'u3') == ''
    assert loaded.get_work('w1', available_gb=1).key == 'u3'
    assert loaded.get_work('w1', available_gb=1).key == 'u1'


def test_clear(cli, loaded):
    loaded.get_work('w1', available_gb=1).fail()       # u1
    assert cli('clear', '-W', 'cli_spec', '-s', 'failed') == 'Removed 1 work units.\n'
    assert cli('clear', '-W', 'cli_spec', 'u2') == 'Removed 1 work units.\n'
    assert cli('clear', '-W', 'cli_spec', '-s', 'finished', 'u3') == \
        'Removed 0 work units.\n'
    assert keys_of(loaded, 'cli_spec') == ['u3']
    assert cli('clear', '-W', 'cli_spec') == 'Removed 1 work units.\n'
    assert loaded.get_work_units('cli_spec') == []


def test_delete(cli, loaded):
    assert cli('delete', stdin=b'n\n').endswith('not deleting anything\n')
    assert [s['name'] for s in loaded.iter_work_specs()] == ['cli_spec']
    assert cli('delete', '-y') == 'deleting all\n'
    assert list(loaded.iter_work_specs()) == []


def test_workers_and_worker_stats(cli, tm):
    before = ast.literal_eval(cli('worker_stats'))
    assert sorted(before) == ['num_children', 'num_expirable', 'num_workers']
    tm.worker_heartbeat('cli-parent', 'RUN', 600, {'hostname': 'h1', 'pid': 7})
    tm.worker_heartbeat('cli-child', 'RUN', 600, {'hostname': 'h2'},
                        parent='cli-parent')
    out = cli('workers').splitlines()
    assert 'cli-child (RUN)' in out and 'cli-parent (RUN)' in out
    assert out == sorted(out)
    details = cli('workers', '--details')
    assert '  hostname: h1\n' in details and '  pid: 7\n' in details
    assert cli('workers', '--all') == cli('workers')
    after = ast.literal_eval(cli('worker_stats'))
    assert after['num_workers'] == before['num_workers'] + 2
    tm.worker_unregister('cli-child')
    tm.worker_unregister('cli-parent')
    assert 'cli-parent (RUN)' not in cli('workers').splitlines()


def test_config(cli, tmpdir, server_config_yaml):
    expected = yaml.safe_load(server_config_yaml)
    # `coordinate config` uses yaml.dump, which tags Python 2 unicode values.
    assert yaml.load(cli('config'), Loader=yaml.UnsafeLoader) == expected
    out = tmpdir.join('server-config.yaml')
    assert cli('config', '-o', str(out)) == ''
    assert yaml.load(out.read(), Loader=yaml.UnsafeLoader) == expected


def test_rpc(cli, loaded):
    out = cli('rpc', 'count_work_units', 'cli_spec')
    assert ast.literal_eval(out) == ({AVAILABLE: 3}, None)


def test_run_one(cli, tm):
    tm.set_work_spec({'name': 'A', 'min_gb': 1, 'module': 'chain_tasks',
                      'run_function': 'run_a', 'then': 'B'})
    tm.set_work_spec({'name': 'B', 'min_gb': 1, 'module': 'chain_tasks',
                      'run_function': 'run_b'})
    tm.add_work_units('A', [('a1', {}), ('a2', {})])
    cli('run_one', '--from-work-spec', 'A')
    assert tm.get_work_unit_status('A', 'a1')['status'] == FINISHED
    assert tm.get_work_units('B') == [('a1-b', {'from': 'a1'})]
    # With a limit it repeats until no work is left; the last, empty
    # get_work makes the exit status 2.
    cli('run_one', '--from-work-spec', 'A', '--limit-count', '5', rc=2)
    assert tm.get_work_unit_status('A', 'a2')['status'] == FINISHED
    cli('run_one', '--from-work-spec', 'A', rc=2)
    cli('run_one', '--limit-count', '5', rc=2)
    assert dict(tm.get_work_units('B', state=FINISHED)) == {
        'a1-b': {'from': 'a1', 'done_by': 'run_b'},
        'a2-b': {'from': 'a2', 'done_by': 'run_b'}}


def test_coordinate_worker_runs_a_chained_flow(tm, tmpdir, coordinated_address):
    flow = {
        'A': {'name': 'A', 'min_gb': 1, 'module': 'chain_tasks',
              'run_function': 'run_a', 'then': 'B'},
        'B': {'name': 'B', 'min_gb': 1, 'module': 'chain_tasks',
              'run_function': 'run_b'},
    }
    tm.add_flow(flow, config={})
    keys = ['unit%02d' % i for i in range(12)]
    tm.add_work_units('A', [(k, {'i': i}) for i, k in enumerate(keys)])
    config = fork_worker_config(tmpdir, coordinated_address)
    env = worker_env()
    log = tmpdir.join('worker.log')
    workers_before = tm.workers()
    with open(str(log), 'wb') as logf:
        proc = subprocess.Popen(
            [os.path.join(BIN, 'coordinate_worker'), '-c', str(config),
             '--foreground'], stdout=logf, stderr=subprocess.STDOUT, env=env,
            cwd=str(tmpdir))
        try:
            deadline = time.time() + WORKER_FINISH_TIMEOUT
            done = {FINISHED: len(keys)}
            while time.time() < deadline and proc.poll() is None:
                if (tm.count_work_units('A') == done and
                        tm.count_work_units('B') == done):
                    break
                time.sleep(0.2)
            assert proc.poll() is None, 'worker exited early:\n' + log.read()
            assert tm.count_work_units('A') == done, log.read()
            assert tm.count_work_units('B') == done, log.read()
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            deadline = time.time() + WORKER_STOP_TIMEOUT
            while proc.poll() is None and time.time() < deadline:
                time.sleep(0.1)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
                pytest.fail('coordinate_worker did not stop within %.0fs of '
                            'SIGTERM:\n%s' % (WORKER_STOP_TIMEOUT, log.read()))
    # A graceful stop: children finish and unregister, then the parent does.
    assert proc.returncode == 0, log.read()
    assert tm.workers() == workers_before, log.read()
    expected_b = dict(('%s-b' % k, {'from': k, 'done_by': 'run_b'})
                      for k in keys)
    assert dict(tm.get_work_units('B')) == expected_b
    statuses = tm.get_work_unit_status('A', keys) + \
        tm.get_work_unit_status('B', sorted(expected_b))
    assert [s['status'] for s in statuses] == [FINISHED] * (2 * len(keys))


def test_cbor_c_extension_is_used():
    # The legacy clients in production ran with the cbor C extension; its
    # decoding (integers as long, see test_work_unit) is what we test with.
    import cbor._cbor  # noqa: F401
