"""Units/s of real Python workers: the legacy client against each daemon.

    make perf-python    # = scripts/pythontest.sh --setup-only, then
    .venv-py27/bin/python scripts/pyclient_bench.py [-units N] [-clients C] [-runs R]

The Python 2.7 venv (scripts/pythontest.sh builds it) holds the real
coordinate==0.1.5. For each daemon in turn -- the Python daemon (memory,
it never syncs), ours volatile (-backend memory:), ours durable (-sync
group, the default) and, when $COORDINATE_TEST_POSTGRES names a server,
ours on PostgreSQL -- this adds N units to one spec through TaskMaster,
then runs C worker processes that each loop TaskMaster.get_work and
WorkUnit.finish until the spec is drained, and prints units/s and the
finish latency seen by the client (p50 and p99 over every finish).
Daemons alternate run by run, R rounds. The daemon binary comes from
$COORDINATED_BIN, else `go build`. A benchmark, not a test: it checks
only that every unit was finished once (pythontest/legacy/
test_pyclient_bench.py runs it small against the suites' daemon, so it
keeps working).
"""
from __future__ import absolute_import, print_function

import multiprocessing
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'pythontest'))

import coordinated_proc  # noqa: E402
import python_daemon  # noqa: E402
from coordinate.job_client import TaskMaster  # noqa: E402

SPEC = {'name': 'bench', 'min_gb': 0.0}


def arg(name, default):
    argv = sys.argv[1:]
    if name in argv:
        return int(argv[argv.index(name) + 1])
    return default


def worker(address, index, out):
    """Drain the spec; put (finished, [finish seconds]) on out."""
    tm = TaskMaster({'address': address})
    name = 'w%d' % index
    lat = []
    while True:
        wu = tm.get_work(name, lease_time=300)
        if wu is None:
            break
        t = time.time()
        wu.finish()
        lat.append(time.time() - t)
    out.put((len(lat), lat))


def run(address, units, clients):
    """Add units to spec bench, drain it with clients worker processes,
    delete it. Returns units/s, the finish p50 and p99 in seconds, and
    count_work_units of the spec once drained (every unit FINISHED)."""
    tm = TaskMaster({'address': address})
    tm.set_work_spec(SPEC)
    for start in range(0, units, 1000):
        tm.add_work_units('bench', [('u%08d' % i, {'i': i}) for i in
                                    range(start, min(start + 1000, units))])
    out = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=worker, args=(address, i, out))
             for i in range(clients)]
    t0 = time.time()
    for p in procs:
        p.start()
    done, lat = 0, []
    for _ in procs:
        n, l = out.get()
        done += n
        lat.extend(l)
    took = time.time() - t0
    for p in procs:
        p.join()
    if done != units:
        raise RuntimeError('the workers finished %d units of %d' % (done, units))
    counts = tm.count_work_units('bench')
    tm.del_work_spec('bench')
    lat.sort()
    return units / took, lat[len(lat) // 2], lat[len(lat) * 99 // 100], counts


def daemons():
    """(name, a function making the daemon) for each daemon compared."""
    out = [('python', python_daemon.PythonDaemon),
           ('volatile', lambda: coordinated_proc.Daemon(backend_arg='memory:')),
           ('group', lambda: coordinated_proc.Daemon(backend_arg='memory', sync='group'))]
    url = os.environ.get('COORDINATE_TEST_POSTGRES')
    if url:
        out.append(('postgres', lambda: coordinated_proc.Daemon(backend_arg=url)))
    return out


def main():
    # Each daemon's storage is chosen here, not by the suites' variable.
    os.environ.pop('COORDINATED_SYNC', None)
    units, clients, runs = arg('-units', 5000), arg('-clients', 1), arg('-runs', 3)
    results = {}
    for r in range(runs):
        for name, make in daemons():
            d = make()
            d.start()
            try:
                rate, p50, p99, counts = run(d.address, units, clients)
            finally:
                d.stop()
                if hasattr(d, 'cleanup'):  # the Python daemon's work directory
                    d.cleanup()
            results.setdefault(name, []).append(rate)
            print('round %d %-8s %5d units/s  finish p50 %.2f ms p99 %.2f ms  %r'
                  % (r + 1, name, rate, p50 * 1e3, p99 * 1e3, counts))
            sys.stdout.flush()
    print('%d client(s), %d units, %d rounds: median units/s' % (clients, units, runs))
    for name in results:
        rates = sorted(results[name])
        print('  %-8s %5d (%d-%d)' % (name, rates[len(rates) // 2], rates[0], rates[-1]))


if __name__ == '__main__':
    main()
