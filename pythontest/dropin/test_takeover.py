"""Taking over the real Python daemon's snapshot directory.

Python 2.7 (the legacy client and the real coordinate 0.1.5 daemon). The
module starts the Python daemon once, as a unit file would (--host,
--port, and --conf= and --snap: prefixes of --config and --snapshot-dir),
loads flows and units with the legacy `coordinate` CLI, works units to
every status with the legacy client (pending, failed with a traceback,
chained `then` units, a paused spec, a continuous spec),
has it write snapshot S1, makes more (logged) changes, has it write S2 and a
gzip snapshot, records everything the legacy client reports, and stops it
with SIGTERM. Each test then starts our coordinated on a copy of that
directory and compares what the legacy client reports, field by field.

The backend is $COORDINATED_BACKEND (memory, or a postgres:// URL: then
every test clears what it imported, since a take-over only imports into an
empty backend).
"""
from __future__ import absolute_import, print_function

import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib2

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import coordinated_proc  # noqa: E402
from python_daemon import PythonDaemon  # noqa: E402
from coordinate.job_client import TaskMaster  # noqa: E402

BIN = os.path.dirname(sys.executable)

FLOWS = """\
flows:
  ingest:
    min_gb: 1
    then: process
    desc: chained into process
  process:
    min_gb: 1
    max_running: 10
  held:
    min_gb: 1
  tick:
    min_gb: 1
    continuous: true
    interval: 3600
"""

UNITS = '\n'.join('{"u%d": {"n": %d}}' % (i, i) for i in range(8)) + '\n'
HELD_UNITS = '{"h1": {}}\n{"h2": {"deep": [1, 2.5, null, {"x": "y"}]}}\n'
LATE_UNITS = '{"v1": {"late": true}}\n{"v2": {}}\n'

# Units whose completion time or lease is set by the replay of S1's log
# (the time of the import, as Python's own replay would): their
# expiration is compared only when S2 itself is loaded.
REPLAY_TIMED = set([('ingest', 'u5'), ('ingest', 'u6'), ('process', 'o1')])


def cli(config, *args):
    cmd = [os.path.join(BIN, 'coordinate'), '-c', config] + list(args)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    out = proc.communicate()[0]
    assert proc.returncode == 0, (cmd, out)
    return out


def fail_with_traceback(wu, message):
    try:
        raise RuntimeError(message)
    except RuntimeError as e:
        wu.fail(exc=e)


def report(address):
    """Everything the legacy client can see, as plain comparable values."""
    tm = TaskMaster({'address': address})
    out = {}
    try:
        specs, _ = tm._rpc('list_work_specs', ({},))
        for spec in specs:
            name = spec['name']
            meta, _ = tm._rpc('get_work_spec_meta', (name,))
            counts, _ = tm._rpc('count_work_units', (name,))
            units, _ = tm._rpc('get_work_units', (name, {'limit': 10000}))
            keys = sorted(k for k, _ in units)
            statuses, _ = tm._rpc('get_work_unit_status', (name, keys))
            out[name] = {
                'definition': tm._rpc('get_work_spec', (name,)),
                'meta': meta,
                'counts': counts,
                'units': dict(units),
                'statuses': dict(zip(keys, statuses)),
            }
    finally:
        tm.close()
    return out


@pytest.fixture(scope='module')
def python_state():
    """Run the Python daemon; return (snapshot dir, config, its report)."""
    snapdir = tempfile.mkdtemp(prefix='py-snapshots-')
    work = tempfile.mkdtemp(prefix='py-client-')
    config = os.path.join(work, 'coordinate.yaml')
    with open(config, 'w') as f:
        f.write('coordinate:\n  job_queue:\n    log_path_format: %s\n'
                % os.path.join(snapdir, 'log_{timestamp}'))
    pd = PythonDaemon(abbreviated(config, snapdir)).start()
    try:
        client = os.path.join(work, 'client.yaml')
        with open(client, 'w') as f:
            f.write('coordinate:\n  address: "%s"\n' % pd.address)
        for name, text in (('flows.yaml', FLOWS), ('units.json', UNITS),
                           ('held.json', HELD_UNITS), ('late.json', LATE_UNITS)):
            with open(os.path.join(work, name), 'w') as f:
                f.write(text)
        cli(client, 'flow', os.path.join(work, 'flows.yaml'))
        cli(client, 'addwork', '-W', 'ingest', '-u', os.path.join(work, 'units.json'))
        cli(client, 'addwork', '-W', 'held', '-u', os.path.join(work, 'held.json'))
        cli(client, 'pause', 'held')
        cli(client, 'prioritize', 'ingest', 'u7')
        tm = TaskMaster({'address': pd.address})
        tm._rpc('control_work_spec', ('process', {'weight': 3}))
        wu = tm.get_work('w-one', available_gb=8, lease_time=3000,
                         work_spec_names=['ingest'])  # u7 (priority 1)
        assert wu.key == 'u7'
        wu.data['output'] = ['o1', ['o2', {'from': 'u7'}]]
        wu.finish()
        fail_with_traceback(tm.get_work('w-one', available_gb=8, lease_time=3000,
                                        work_spec_names=['ingest']), 'u0 broke')
        tm.get_work('w-two', available_gb=8, lease_time=3000,
                    work_spec_names=['ingest'])  # u1 stays pending
        tm.get_work('w-three', available_gb=8, lease_time=3000,
                    work_spec_names=['tick'])  # a continuous unit, pending
        tm._rpc('snapshot', ())  # S1; the log after it starts now

        # Changes after S1, all in the action log.
        cli(client, 'addwork', '-W', 'ingest', '-u', os.path.join(work, 'late.json'))
        wu = tm.get_work('w-four', available_gb=8, lease_time=3000,
                         work_spec_names=['process'])  # o1
        wu.finish()
        tm.get_work('w-four', available_gb=8, lease_time=3000,
                    work_spec_names=['ingest'])  # u2 pending
        tm.del_work_units('ingest', work_unit_keys=['u3'])
        for key in ('u5', 'u6'):
            tm.update_work_unit('ingest', key, status=4 if key == 'u5' else 5,
                                data={'n': 5, 'traceback': 'by hand'} if key == 'u6' else None)
        tm._rpc('snapshot', ())  # S2
        tm._rpc('snapshot', (os.path.join(snapdir, 'snapshot_29991231_000000.000.gz'),))
        tm.close()
        expected = report(pd.address)
    finally:
        assert pd.stop() in (-signal.SIGTERM, 0, 1), pd.log()  # as systemd stops it
    yield snapdir, config, expected
    pd.cleanup()
    shutil.rmtree(snapdir, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)


def snapshots(snapdir):
    plain = sorted(p for p in glob.glob(os.path.join(snapdir, 'snapshot_*.???'))
                   if not p.endswith('.md5'))
    assert len(plain) == 2, plain
    return plain  # [S1, S2]


def copy_dir(snapdir, keep):
    """A copy of the snapshot directory with only the files keep() says."""
    d = tempfile.mkdtemp(prefix='takeover-')
    for p in glob.glob(os.path.join(snapdir, '*')):
        if keep(os.path.basename(p)):
            shutil.copy2(p, d)
    return d


def fetch(url):
    """GET url, retrying while the listener is not open yet (bounded)."""
    deadline = time.time() + 30
    while True:
        try:
            return urllib2.urlopen(url, timeout=30).read()
        except urllib2.URLError:
            if time.time() > deadline:
                raise
            time.sleep(0.05)


def abbreviated(config, snapdir):
    """-c and --snapshot-dir as prefixes argparse accepted, as a unit file
    might spell them (the Python daemon is started with these too)."""
    return ['--conf=' + config, '--snap', snapdir]


def start_ours(snapdir, config, extra=(), abbreviate=False):
    """Our daemon with the Python daemon's command line (and -backend)."""
    backend = coordinated_proc.backend()
    if abbreviate:
        argv = ['--ho', '127.0.0.1', '--po', '{port}'] + abbreviated(config, snapdir)
    else:
        argv = ['-c', config, '--host', '127.0.0.1', '--port', '{port}',
                '--snapshot-dir', snapdir]
    argv += list(extra)
    if backend != 'memory':
        argv += ['-backend', backend]
    return coordinated_proc.Daemon(argv=argv).start()


def clear(address):
    tm = TaskMaster({'address': address})
    tm.clear()
    tm.close()


def compare(got, want, skip_times=()):
    assert sorted(got) == sorted(want), 'work specs differ'
    for spec in want:
        g, w = got[spec], want[spec]
        for field in ('definition', 'meta', 'counts', 'units'):
            assert g[field] == w[field], (spec, field, g[field], w[field])
        assert sorted(g['statuses']) == sorted(w['statuses']), spec
        for key, ws in w['statuses'].items():
            gs = dict(g['statuses'][key])
            ws = dict(ws)
            ge, we = gs.pop('expiration'), ws.pop('expiration')
            assert gs == ws, (spec, key, gs, ws)
            if (spec, key) in skip_times:
                assert (ge is None) == (we is None), (spec, key, ge, we)
            elif we is None or ge is None:
                assert ge == we, (spec, key, ge, we)
            else:
                assert abs(ge - we) < 1e-5, (spec, key, ge, we)


def carry_on(address):
    """The imported queue works on: continuous timing, leases, chaining."""
    tm = TaskMaster({'address': address})
    try:
        # tick's next continuous unit is due an hour after the last one,
        # which is still pending: finish it, and none is due yet.
        units, _ = tm._rpc('get_work_units', ('tick', {}))
        assert len(units) == 1, units
        assert tm._rpc('update_work_unit', ('tick', units[0][0], {'status': 4})) == (True, None)
        assert tm.get_work('w-five', available_gb=8, lease_time=60,
                           work_spec_names=['tick']) is None
        # The worker holding u1 since before the swap finishes it.
        assert tm._rpc('update_work_unit', ('ingest', 'u1', {
            'status': 4, 'worker_id': 'w-two',
            'data': {'n': 1, 'output': ['o9']}})) == (True, None)
        statuses = tm.get_work_unit_status('process', ['o9'])
        assert statuses[0]['status'] == 1, statuses
    finally:
        tm.close()


def test_newest_snapshot_with_python_command_line(python_state, tmpdir):
    snapdir, config, expected = python_state
    d = copy_dir(snapdir, lambda n: '.gz' not in n)
    pidfile = str(tmpdir.join('coordinated.pid'))
    httpd = '127.0.0.1:%d' % coordinated_proc.free_port()
    ours = start_ours(d, config, ['--pid', pidfile, '--httpd', httpd])
    try:
        with open(pidfile) as f:
            assert int(f.read()) == ours.proc.pid
        page = fetch('http://%s/' % httpd)
        assert 'ingest' in page and 'process' in page, page
        compare(report(ours.address), expected)
        log = ours.log()
        assert 'imported the Python daemon' in log, log
        carry_on(ours.address)
        if coordinated_proc.backend() == 'memory':
            # Our data directory is DIR/coordinated: it holds our journal.
            ours_dir = os.path.join(d, 'coordinated')
            assert any(n.startswith(('journal-', 'snapshot-'))
                       for n in os.listdir(ours_dir)), (os.listdir(ours_dir),
                                                        log)
        else:
            clear(ours.address)
    finally:
        assert ours.stop() == 0
    shutil.rmtree(d)


def test_bad_md5_falls_back_to_older_snapshot_and_log(python_state):
    snapdir, config, expected = python_state
    d = copy_dir(snapdir, lambda n: '.gz' not in n)
    s2 = snapshots(d)[1]
    with open(s2 + '.md5', 'w') as f:
        f.write('0' * 32 + '\n')
    ours = start_ours(d, config)
    try:
        compare(report(ours.address), expected, skip_times=REPLAY_TIMED)
        log = ours.log()
        assert 'MD5 mismatch' in log and os.path.basename(s2) in log, log
        assert 'log_' in log, log
        if coordinated_proc.backend() != 'memory':
            clear(ours.address)
    finally:
        assert ours.stop() == 0
    shutil.rmtree(d)


def test_gzip_snapshot_abbreviated_options(python_state):
    """Started with option prefixes (--snap, --po, --conf=): the snapshot
    directory is taken over as with the options spelled out."""
    snapdir, config, expected = python_state
    d = copy_dir(snapdir, lambda n: '.gz' in n)
    ours = start_ours(d, config, abbreviate=True)
    try:
        compare(report(ours.address), expected)
        if coordinated_proc.backend() != 'memory':
            clear(ours.address)
    finally:
        assert ours.stop() == 0
    shutil.rmtree(d)


def test_empty_directory(tmpdir):
    d = tempfile.mkdtemp(prefix='takeover-empty-')
    config = tmpdir.join('coordinate.yaml')
    config.write('coordinate:\n  job_queue:\n    log_path_format: %s\n'
                 % os.path.join(d, 'log_{timestamp}'))
    ours = start_ours(d, str(config))
    try:
        assert report(ours.address) == {}
        assert 'no Python snapshot to import' in ours.log()
    finally:
        assert ours.stop() == 0
    shutil.rmtree(d)


def test_sigterm_leaves_a_torn_log(tmpdir):
    """The Python daemon buffers its action log: stopped with SIGTERM after
    a snapshot and many changes, its newest log ends inside a record. We
    import the snapshot and every complete record, skip the torn one, and
    say so."""
    snapdir = tempfile.mkdtemp(prefix='py-torn-')
    config = str(tmpdir.join('coordinate.yaml'))
    with open(config, 'w') as f:
        f.write('coordinate:\n  job_queue:\n    log_path_format: %s\n'
                % os.path.join(snapdir, 'log_{timestamp}'))
    total = 600
    pd = PythonDaemon(['-c', config, '--snapshot-dir', snapdir]).start()
    try:
        tm = TaskMaster({'address': pd.address})
        tm.set_work_spec({'name': 'bulk', 'min_gb': 1})
        tm._rpc('snapshot', ())
        # 131-byte records: the buffer's flushes (a power of two) never
        # end on a record boundary.
        for i in range(total):
            tm.add_work_units('bulk', [('u%03d' % i, {'pad': 'x' * 98})])
        tm.close()
    finally:
        pd.stop()  # SIGTERM, as systemd stops it
    ours = start_ours(snapdir, config)
    try:
        units = report(ours.address)['bulk']['units']
        n = len(units)
        assert 0 < n < total, n
        assert sorted(units) == ['u%03d' % i for i in range(n)]
        assert 'ends inside a record' in ours.log(), ours.log()
        if coordinated_proc.backend() != 'memory':
            clear(ours.address)
    finally:
        assert ours.stop() == 0
    pd.cleanup()
    shutil.rmtree(snapdir, ignore_errors=True)
