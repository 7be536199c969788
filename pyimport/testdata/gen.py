"""Regenerates the files in this directory with the real Python daemon.

Run from the repository root with the Python 2.7 venv scripts/pythontest.sh
builds:

    .venv-py27/bin/python pyimport/testdata/gen.py

It starts coordinate 0.1.5's `coordinated` (pythontest/python_daemon.py)
with --snapshot-dir and an action log, drives it with the legacy client,
and asks it to write snapshots (the `snapshot` RPC), then renames the files
to fixed timestamps so that tests can name them:

  snapshot_20250101_000001.000(.md5)  state A: every kind of spec and unit
  log_20250101_000002.000             every logged action after A
  snapshot_20250101_000003.000(.md5)  state B = A + that log, written by Python
  gz/snapshot_20250101_000001.000.gz(.md5)  state A written gzip-compressed
  compressed/snapshot_20250101_000001.000.{bz2,xz}  state A compressed by the
      bzip2 and xz tools (the Python 2.7 venv has no lzma to write .xz)
  odd/snapshot_20250101_000001.000(.md5)  odd but valid state: a definition
      with an integer key, `continuous` set to None by control_work_spec
  restart/  a daemon stopped (SIGTERM) twice with no snapshot in between:
      snapshot_20250101_000001.000(.md5), the log before it
      (log_20250101_000000.000) and one log per run after it, each cut
      inside a record (log_20250101_000002.000, log_20250101_000003.000)

`gen.py restart` writes only restart/.
"""
from __future__ import print_function

import glob
import os
import shutil
import subprocess
import signal
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'pythontest'))
from python_daemon import PythonDaemon  # noqa: E402
from coordinate.job_client import TaskMaster  # noqa: E402


def start(d, extra_config=''):
    cfg = os.path.join(d, 'cfg.yaml')
    with open(cfg, 'w') as f:
        f.write('coordinate:\n  job_queue:\n'
                '    log_path_format: %s/log_{timestamp}\n%s' % (d, extra_config))
    pd = PythonDaemon(['--snapshot-dir', d, '-c', cfg]).start()
    host, port = pd.address.split(':')
    return pd, TaskMaster({'address': [host, int(port)]})


def state_a(tm):
    tm.set_work_spec({'name': 'flow', 'min_gb': 1, 'then': 'sink', 'nice': 5})
    tm.set_work_spec({'name': 'sink', 'min_gb': 1, 'max_running': 3})
    tm.set_work_spec({'name': 'paused', 'min_gb': 1})
    tm.set_work_spec({'name': 'tick', 'min_gb': 1, 'continuous': True,
                      'interval': 3600})
    tm.set_work_spec({'name': u'\u00e9t\u00e9', 'min_gb': 1})
    tm.add_work_units('flow', [('f%d' % i, {'i': i}) for i in range(6)])
    tm.add_work_units('flow', [(u'texte', {u'k': u'v\u00e9'}, {'priority': 7})])
    tm.add_work_units('paused', [('p1', {}), ('p2', {'x': [1, 2.5, None]})])
    tm.add_work_units(u'\u00e9t\u00e9', [('e1', {})])
    tm.pause_work_spec('paused', paused=True)
    tm._rpc('control_work_spec', ('sink', {'weight': 9}))
    # flow: texte (priority 7) first, then f0..f5.
    wu = tm.get_work('worker-a', available_gb=10, lease_time=900,
                     work_spec_names=['flow'])  # texte
    wu.data['output'] = ['s1', ['s2', {'from': 'texte'}]]
    wu.finish()
    wu = tm.get_work('worker-a', available_gb=10, lease_time=900,
                     work_spec_names=['flow'])  # f0
    try:
        raise ValueError('boom')
    except ValueError as e:
        wu.fail(exc=e)
    tm.get_work('worker-b', available_gb=10, lease_time=1200,
                work_spec_names=['flow'])  # f1 stays pending
    tm.get_work('worker-c', available_gb=10, lease_time=600,
                work_spec_names=['tick'])  # a continuous unit, pending
    # f2 finishes after A: its chained unit inherits this priority, which
    # the log's add_work_unit record does not carry.
    tm.prioritize_work_units('flow', ['f2'], priority=2)
    tm._rpc('snapshot', ())


def log_actions(tm):
    tm.set_work_spec({'name': 'late', 'min_gb': 1})
    tm.set_work_spec({'name': 'sink', 'min_gb': 1, 'max_running': 4})
    tm.add_work_units('late', [('l1', {'a': 1}), ('l2', {})])
    tm.add_work_units('flow', [('f5', {'again': True})])
    tm.del_work_units('sink', state=1)
    wu = tm.get_work('worker-d', available_gb=10, lease_time=300,
                     work_spec_names=['flow'])  # f2
    wu.data['output'] = {'s3': {'from': 'f2'}}
    wu.finish()
    wu = tm.get_work('worker-d', available_gb=10, lease_time=300,
                     work_spec_names=['flow'])  # f3
    try:
        raise KeyError('lost')
    except KeyError as e:
        wu.fail(exc=e)
    tm.get_work('worker-e', available_gb=10, lease_time=700,
                work_spec_names=['late'])  # l1 pending
    tm.update_work_unit('flow', 'f4', lease_time=600, status=3)
    tm.del_work_units('flow', work_unit_keys=['f5'])
    tm.set_work_spec({'name': 'gone', 'min_gb': 1})
    tm.add_work_units('gone', [('g', {})])
    tm.del_work_spec('gone')
    tm._rpc('snapshot', ())


def odd_state(tm):
    tm.set_work_spec({'name': 'intkey', 'min_gb': 1, 5: 'five',
                      'config': {7: 'seven'}})
    tm.add_work_units('intkey', [('a', {1: 2})])
    tm.set_work_spec({'name': 'cont', 'min_gb': 1, 'continuous': True})
    tm._rpc('control_work_spec', ('cont', {'continuous': None}))
    tm._rpc('snapshot', ())


def restart_state():
    """Two runs of the daemon after one snapshot, each stopped by SIGTERM
    (as systemd stops it) before any other snapshot: each run's log ends
    inside a record, its last 4 KiB buffer never written."""
    d = tempfile.mkdtemp(prefix='pyimport-gen-restart-')
    cfg = os.path.join(d, 'cfg.yaml')
    with open(cfg, 'w') as f:
        f.write('coordinate:\n  job_queue:\n    do_recover: true\n'
                '    log_path_format: %s/log_{timestamp}\n' % d)
    for run, first in (('a', True), ('b', False)):
        pd = PythonDaemon(['--snapshot-dir', d, '-c', cfg]).start()
        host, port = pd.address.split(':')
        tm = TaskMaster({'address': [host, int(port)]})
        try:
            if first:
                tm.set_work_spec({'name': 'ws', 'min_gb': 1})
                tm._rpc('snapshot', ())
            for i in range(150):
                tm.add_work_units('ws', [('%s%03d' % (run, i),
                                          {'payload': 'x' * 20})])
        finally:
            pd.stop(signal.SIGTERM)
            pd.cleanup()
    out = os.path.join(HERE, 'restart')
    if not os.path.isdir(out):
        os.mkdir(out)
    logs = sorted(glob.glob(os.path.join(d, 'log_*')))
    assert len(logs) == 3, logs
    for p, n in zip(logs, ['log_20250101_000000.000', 'log_20250101_000002.000',
                           'log_20250101_000003.000']):
        shutil.copy(p, os.path.join(out, n))
    rename(d, 'snapshot', [os.path.join('restart', 'snapshot_20250101_000001.000')])
    shutil.rmtree(d)


def rename(d, prefix, names):
    paths = sorted(glob.glob(os.path.join(d, prefix + '_????????_??????.???*')))
    paths = [p for p in paths if not p.endswith('.md5')]
    assert len(paths) >= len(names), (prefix, paths)
    for p, n in zip(paths, names):
        if n is None:
            continue
        suffix = p[len(os.path.join(d, prefix)) + 20:]
        shutil.copy(p, os.path.join(HERE, n + suffix))
        if os.path.exists(p + '.md5'):
            shutil.copy(p + '.md5', os.path.join(HERE, n + suffix + '.md5'))


def main():
    d = tempfile.mkdtemp(prefix='pyimport-gen-')
    pd, tm = start(d)
    try:
        state_a(tm)
        log_actions(tm)
    finally:
        pd.stop(signal.SIGINT)
        pd.cleanup()
    rename(d, 'snapshot', ['snapshot_20250101_000001.000',
                           'snapshot_20250101_000003.000'])
    logs = sorted(glob.glob(os.path.join(d, 'log_*')))
    # logs[0] precedes snapshot A (all in it); logs[1] is between A and B.
    shutil.copy(logs[1], os.path.join(HERE, 'log_20250101_000002.000'))
    shutil.rmtree(d)

    d = tempfile.mkdtemp(prefix='pyimport-gen-gz-')
    pd, tm = start(d, '    snapshot_path_format: %s/snapshot_{timestamp}.gz\n' % d)
    # --snapshot-dir overrides the config's format: ask for a .gz name.
    try:
        state_a(tm)
        tm._rpc('snapshot', (os.path.join(d, 'snapshot_20250101_000001.000.gz'),))
    finally:
        pd.stop(signal.SIGINT)
        pd.cleanup()
    gz = os.path.join(HERE, 'gz')
    if not os.path.isdir(gz):
        os.mkdir(gz)
    for n in ('snapshot_20250101_000001.000.gz', 'snapshot_20250101_000001.000.gz.md5'):
        shutil.copy(os.path.join(d, n), os.path.join(gz, n))
    shutil.rmtree(d)

    d = tempfile.mkdtemp(prefix='pyimport-gen-odd-')
    pd, tm = start(d)
    try:
        odd_state(tm)
    finally:
        pd.stop(signal.SIGINT)
        pd.cleanup()
    odd = os.path.join(HERE, 'odd')
    if not os.path.isdir(odd):
        os.mkdir(odd)
    rename(d, 'snapshot', [os.path.join('odd', 'snapshot_20250101_000001.000')])
    shutil.rmtree(d)

    comp = os.path.join(HERE, 'compressed')
    if not os.path.isdir(comp):
        os.mkdir(comp)
    a = os.path.join(HERE, 'snapshot_20250101_000001.000')
    for tool, suffix in (('bzip2', '.bz2'), ('xz', '.xz')):
        with open(a, 'rb') as fin:
            data = subprocess.check_output([tool, '-c'], stdin=fin)
        with open(os.path.join(comp, os.path.basename(a) + suffix), 'wb') as f:
            f.write(data)
        shutil.copy(a + '.md5', os.path.join(comp, os.path.basename(a) + suffix + '.md5'))


if __name__ == '__main__':
    if sys.argv[1:] == ['restart']:
        restart_state()
    else:
        main()
        restart_state()
