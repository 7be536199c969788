"""The real Python daemon and coordinated, side by side (docs/compat.md).

Every case runs the same calls through the legacy client against both
daemons and compares the typed replies (harness.py). A case whose replies
differ must be listed, with its reason, in the table of docs/compat.md
("Differences the comparison suite allows"); a listed case that no longer
differs, or that is not a case here, fails too, so the table stays true.
"""
from __future__ import absolute_import, print_function

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest
from coordinate.constants import FAILED

from harness import Recorder, allowed_differences, compare

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.dirname(sys.executable)

CASES = []


def case(fn=None, parallel=False):
    """Register fn as a case; parallel ones run on both daemons at once."""
    def register(f):
        CASES.append((f.__name__[len('case_'):].replace('_', '-'), f,
                      parallel))
        return f
    return register(fn) if fn is not None else register


# --- 1. work spec definitions Python stored ----------------------------------

STORED = [
    ('desc-int', {'desc': 5}),
    ('desc-list', {'desc': [1, 'x']}),
    ('config-string', {'config': 'settings.yaml'}),
    ('config-list', {'config': [1, 2]}),
    ('module-int', {'module': 5}),
    ('run-function-list', {'run_function': ['f']}),
    ('then-int', {'then': 5}),
    ('runtime-int', {'runtime': 5}),
    ('priority-text', {'priority': 'high'}),
    ('min-gb-text', {'min_gb': 'lots'}),
    ('min-gb-list', {'min_gb': [1]}),
    ('max-retries-text', {'max_retries': 'x'}),
    ('weight-huge', {'weight': 10 ** 16}),
    ('weight-float', {'weight': 2.7}),
    ('weight-string', {'weight': '7'}),
    ('nice', {'nice': 5}),
    ('interval-string', {'interval': '2.5', 'continuous': True}),
    ('interval-negative', {'interval': -5}),
    ('max-running-string', {'max_running': '2'}),
    ('continuous-int', {'continuous': 1, 'interval': 10}),
    ('continuous-string', {'continuous': 'yes'}),
    ('disabled-int', {'disabled': 1}),
    ('module-text', {'module': u'mod', 'run_function': u'run'}),
    ('module-bytes', {'module': 'mod', 'run_function': 'run'}),
]


def _spec_stored(extra):
    # text module/run_function come back as bytes (compat.md, section 15 #29)
    text_module = (("'module']", "'run_function']")
                   if isinstance(extra.get('module'), unicode) else False)

    def run(c):
        spec = dict(extra, name='s')
        c('set_work_spec', spec)
        c('get_work_spec', 's', differs=text_module)
        c('list_work_specs', {}, differs=text_module)
        c('get_work_spec_meta', 's')
        c('add_work_units', 's', [('k', {'a': 1})])
        c('get_work', 'w-stored', {'lease_time': 60})
    return run


for _name, _extra in STORED:
    CASES.append(('spec-stored-' + _name, _spec_stored(_extra), False))


@case
def case_spec_rejected(c):
    c('set_work_spec', ['name', 'x'])
    c('set_work_spec', {'desc': 'no name'})
    c('set_work_spec', {'name': 'bad', 'weight': 'abc'})
    c('set_work_spec', {'name': 'bad', 'interval': 'soon'})
    c('set_work_spec', {'name': 'bad', 'max_running': 'many'})
    c('set_work_spec', {'name': 'bad', 'max_getwork': '1.5'})
    c('set_work_spec', {'name': 'bad', 'nice': 'x'})
    c('set_work_spec', {'name': 'bad', 'nice': None})
    c('set_work_spec', {'name': 'bad', 'interval': [1]})
    c('set_work_spec', {'name': 'ok', 'weight': None, 'nice': 3,
                        'max_running': None, 'interval': None})
    c('get_work_spec_meta', 'ok')
    c('list_work_specs', {})


@case
def case_spec_name_not_string(c):
    c('set_work_spec', {'name': 5}, differs=True)
    c('list_work_specs', {}, differs=True)


@case
def case_spec_reset_keeps_units(c):
    c('set_work_spec', {'name': 's', 'weight': 3, 'max_running': 1})
    c('add_work_units', 's', [('k1', {}), ('k2', {})])
    c('control_work_spec', 's', {'weight': 9})
    c('set_work_spec', {'name': 's', 'weight': 4, 'desc': 'again'})
    c('get_work_spec_meta', 's')
    c('count_work_units', 's')


# --- 2, 3. max_running 0 and max_getwork 0 -----------------------------------

@case
def case_max_running_zero(c):
    c('set_work_spec', {'name': 's', 'max_running': 0})
    c('add_work_units', 's', [('a', {}), ('b', {})])
    c('get_work', 'w-mr0', {})
    c('get_work', 'w-mr0', {'max_jobs': 5})
    c('get_work_spec_meta', 's')
    c('control_work_spec', 's', {'max_running': 1})
    c('get_work', 'w-mr0', {'max_jobs': 5, 'lease_time': 60})
    c('get_work_spec_meta', 's')
    c('control_work_spec', 's', {'max_running': 0})
    c('get_work_spec_meta', 's')
    c('control_work_spec', 's', {'max_running': None})
    c('get_work', 'w-mr0', {'max_jobs': 5, 'lease_time': 60})


@case
def case_max_getwork_zero(c):
    c('set_work_spec', {'name': 's', 'max_getwork': 0})
    c('add_work_units', 's', [('a', {}), ('b', {}), ('c', {})])
    c('get_work', 'w-mg0', {'max_jobs': 5, 'lease_time': 60})
    c('set_work_spec', {'name': 't', 'max_getwork': 2})
    c('add_work_units', 't', [('a', {}), ('b', {}), ('c', {})])
    c('get_work', 'w-mg0', {'max_jobs': 5, 'lease_time': 60,
                            'work_spec_names': ['t']})


# --- 4, 5. continuous specs, numbers echoed with their type ------------------

@case
def case_continuous_keys(c):
    c('set_work_spec', {'name': 'c', 'continuous': True})
    c('get_work', 'w-cont', {'lease_time': 60})
    c('get_work_units', 'c', {})
    c('count_work_units', 'c')


@case
def case_meta_echo(c):
    c('set_work_spec', {'name': 's', 'interval': 10, 'continuous': 1})
    c('get_work_spec_meta', 's')
    c('control_work_spec', 's', {'interval': 3})
    c('get_work_spec_meta', 's')
    c('control_work_spec', 's', {'interval': 1.5, 'continuous': False})
    c('get_work_spec_meta', 's')
    c('control_work_spec', 's', {'continuous': True, 'weight': 3,
                                 'status': 2})
    c('get_work_spec_meta', 's')
    c('control_work_spec', 's', {'interval': None})
    c('get_work_spec_meta', 's')
    c('control_work_spec', 'missing', {'weight': 3})
    c('set_work_spec', {'name': 'n'})
    c('control_work_spec', 'n', {'continuous': True})
    c('get_work_spec_meta', 'n')
    c('get_work_spec_meta', 'missing')


@case
def case_control_values_converted(c):
    c('set_work_spec', {'name': 's'})
    c('control_work_spec', 's', {'weight': 2.7, 'max_running': '2',
                                 'interval': '3'})
    c('get_work_spec_meta', 's', differs=True)
    c('control_work_spec', 's', {'weight': 5, 'max_running': 4,
                                 'interval': 7})
    c('get_work_spec_meta', 's')


# --- 6. values Python converted --------------------------------------------

@case
def case_coerced_values(c):
    c('set_work_spec', {'name': 'abc'})
    c('add_work_units', 'abc', [('k%d' % i, {}) for i in range(6)])
    c('get_work', 'w-co', {'lease_time': '100'})
    c('get_work_unit_status', 'abc', ['k0'])
    c('get_work', 'w-co', {'max_jobs': '2', 'lease_time': 60})
    c('get_work', 'w-co', {'max_jobs': 2.7, 'lease_time': 60.5})
    c('get_work', 'w-co', {'max_jobs': 1.5, 'work_spec_names': 'abc'})
    c('get_work_units', 'abc', {'limit': '2'})
    c('get_work_units', 'abc', {'limit': 1.9})
    c('list_work_specs', {'limit': '1'})
    c('get_work', 'w-co', {'max_jobs': 'two'})
    c('get_work', 'w-co', {'lease_time': 'soon'})


@case
def case_priorities(c):
    c('set_work_spec', {'name': 's'})
    c('add_work_units', 's', [('a', {}, {'priority': 5}), ('b', {}),
                              ('c', {}, {'priority': 2.5}, 7)])
    c('prioritize_work_units', 's', {'work_unit_keys': ['b'],
                                     'priority': 10})
    c('prioritize_work_units', 's', {'work_unit_keys': ['a'],
                                     'adjustment': 10})
    c('get_work', 'w-pri', {'max_jobs': 10, 'lease_time': 60})
    c('prioritize_work_units', 's', {'priority': 1})
    c('prioritize_work_units', 'missing', {'work_unit_keys': ['a']})


# --- 7. child work units after a lapsed lease -------------------------------

@case(parallel=True)
def case_child_lapsed_lease(c):
    c('set_work_spec', {'name': 's'})
    c('add_work_units', 's', [('k', {'x': 1})])
    c('worker_heartbeat', 'lapse-parent', 'RUN', 600, {}, None)
    c('worker_heartbeat', 'lapse-child', 'RUN', 600, {}, 'lapse-parent')
    c('get_work', 'lapse-child', {'lease_time': 1})
    c('get_child_work_units', 'lapse-parent')
    time.sleep(2.2)
    c('get_child_work_units', 'lapse-parent')
    c('worker_unregister', 'lapse-child')
    c('worker_unregister', 'lapse-parent')


@case
def case_child_unit_given_back(c):
    c('set_work_spec', {'name': 's'})
    c('add_work_units', 's', [('k1', {}), ('k2', {})])
    c('worker_heartbeat', 'back-parent', 'RUN', 600, {}, None)
    c('worker_heartbeat', 'back-child', 'RUN', 600, {}, 'back-parent')
    c('get_work', 'back-child', {'lease_time': 60, 'max_jobs': 2})
    # The Python worker gives units back with update(lease_time=-1): the
    # child's id and the past time; an operator with status 1: no worker.
    c('update_work_unit', 's', 'k1', {'lease_time': -1})
    c('get_child_work_units', 'back-parent')
    c('update_work_unit', 's', 'k2', {'status': 1})
    c('get_child_work_units', 'back-parent')
    c('worker_unregister', 'back-child')
    c('worker_unregister', 'back-parent')


WORKER_CONFIG = """\
coordinate:
  address: "%s"
  default_lifetime: 2
  fork_worker:
    num_workers: 1
    poll_interval: 0.2
    spawn_interval: 0.05
    heartbeat_interval: 1
    stop_jobs_early: 0
"""
WORKER_DEADLINE_SECONDS = 20


@case(parallel=True)
def case_worker_child_overruns_lease(c):
    """A real coordinate_worker whose child overruns a 2 s lease: the parent
    stops the child and fails the unit ("job expired") when
    get_child_work_units names the child as the unit's worker."""
    c('set_work_spec', {'name': 'overrun', 'module': 'overrun_tasks',
                        'run_function': 'run_sleep'})
    c('add_work_units', 'overrun', [('slow', {'x': 1})])
    workdir = tempfile.mkdtemp(prefix='compare-worker-')
    config = os.path.join(workdir, 'worker.yaml')
    with open(config, 'w') as f:
        f.write(WORKER_CONFIG % c.address)
    env = dict(os.environ)
    env['PYTHONPATH'] = HERE + os.pathsep + env.get('PYTHONPATH', '')
    log_path = os.path.join(workdir, 'worker.log')
    with open(log_path, 'wb') as log:
        proc = subprocess.Popen(
            [os.path.join(BIN, 'coordinate_worker'), '-c', config,
             '--foreground'], stdout=log, stderr=subprocess.STDOUT, env=env,
            cwd=workdir, preexec_fn=os.setsid)
        try:
            # Polled with a state query, which the Python daemon answers
            # without sweeping lapsed leases (get_work_unit_status would
            # sweep, and race the parent's check).
            deadline = time.time() + WORKER_DEADLINE_SECONDS
            while time.time() < deadline:
                failed, _ = c.tm._rpc('get_work_units',
                                      ('overrun', {'state': [FAILED]}))
                if failed:
                    break
                time.sleep(0.2)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
    if not os.environ.get("COORDINATED_KEEP_LOGS"):
        shutil.rmtree(workdir, ignore_errors=True)
    # Only the status: the parent's fail and the dying child's own report
    # race to write the unit's data, against either daemon.
    status = c.tm.get_work_unit_status('overrun', 'slow')
    c.note('status after the worker ran', (status or {}).get('status'))


# --- 8. malformed output on finish ------------------------------------------

@case
def case_finish_malformed_output(c):
    c('set_work_spec', {'name': 'a', 'then': 'b'})
    c('set_work_spec', {'name': 'b'})
    c('add_work_units', 'a', [('k1', {}), ('k2', {}), ('k3', {}),
                              ('k4', {})])
    c('get_work', 'w-out', {'max_jobs': 4, 'lease_time': 60})
    c('update_work_unit', 'a', 'k1', {'status': 4, 'data': {'output': 5}},
      differs=True)
    c('update_work_unit', 'a', 'k2', {'status': 4,
                                      'data': {'output': {1: {}}}},
      differs=True)
    c('update_work_unit', 'a', 'k3', {'status': 4,
                                      'data': {'output': [['only']]}},
      differs=True)
    c('update_work_unit', 'a', 'k4', {'status': 4, 'data': {'output': 'xy'}})
    c('count_work_units', 'a')
    c('count_work_units', 'b', differs=True)


@case
def case_finish_chains(c):
    c('set_work_spec', {'name': 'a', 'then': 'b'})
    c('set_work_spec', {'name': 'b'})
    c('add_work_units', 'a', [('k1', {}), ('k2', {}), ('k3', {})])
    c('get_work', 'w-ch', {'max_jobs': 3, 'lease_time': 60})
    c('update_work_unit', 'a', 'k1', {'status': 4, 'data': {
        'output': {'o1': {'x': 1}}}})
    c('update_work_unit', 'a', 'k2', {'status': 4, 'data': {
        'output': ['o2', ('o3', {'y': 2}), ('o4', {}, {'priority': 3})]}})
    c('update_work_unit', 'a', 'k3', {'status': 5, 'data': {
        'traceback': 'boom', 'output': ['never']}})
    c('get_work_units', 'b', {})
    c('get_work_unit_status', 'a', ['k1', 'k3', 'nope'])


@case
def case_then_preempts_through_busy_spec(c):
    # a -> b -> c with b's only unit leased: Python's path scheduler walks
    # through b, so c preempts a (and a wins by weight when b says
    # then_preempts false).
    for preempts in (True, False):
        c('set_work_spec', {'name': 'a', 'then': 'b', 'weight': 100})
        c('set_work_spec', {'name': 'b', 'then': 'c', 'weight': 1,
                            'then_preempts': preempts})
        c('set_work_spec', {'name': 'c', 'weight': 1})
        c('add_work_units', 'b', [('b1', {})])
        c('get_work', 'wb', {'lease_time': 60})
        c('add_work_units', 'a', [('a1', {}), ('a2', {})])
        c('add_work_units', 'c', [('c1', {}), ('c2', {})])
        c('get_work', 'w', {'lease_time': 60})
        for n in ('a', 'b', 'c'):
            c('del_work_spec', n)


# --- the whole RPC surface --------------------------------------------------

@case
def case_spec_listing(c):
    for n in ('b', 'a', 'c'):
        c('set_work_spec', {'name': n, 'desc': n})
    c('list_work_specs', {})
    c('list_work_specs', {'limit': 2})
    c('list_work_specs', {'start': 'b'}, differs=True)
    c('list_work_specs', {'limit': 0}, differs=True)
    c('get_work_spec', 'missing')
    c('del_work_spec', 'a')
    c('del_work_spec', 'a')
    c('list_work_specs', {})


@case
def case_units_add_count_list(c):
    c('set_work_spec', {'name': 's'})
    c('add_work_units', 's', [('b', {'n': 2}), ('a', {'n': 1}),
                              (u'c', {'n': 3}), ('a', {'n': 4})])
    c('count_work_units', 's')
    c('get_work_units', 's', {})
    c('get_work_units', 's', {'start': 'b'})
    c('get_work_units', 's', {'limit': 1})
    c('get_work_units', 's', {'state': 1})
    c('get_work_units', 's', {'state': [1, 3]})
    c('get_work_units', 's', {'work_unit_keys': ['a', 'zz']})
    c('get_work_units', 's', {'limit': 0}, differs=True)
    c('get_work_unit_status', 's', ['a', 'zz'])
    c('add_work_units', 'missing', [('a', {})])
    c('count_work_units', 'missing')
    c('get_work_units', 'missing', {})
    c('get_work_unit_status', 'missing', ['a'])


@case
def case_units_delete(c):
    c('set_work_spec', {'name': 's'})
    c('add_work_units', 's', [('k%d' % i, {}) for i in range(6)])
    c('get_work', 'w-del', {'max_jobs': 2, 'lease_time': 60})
    c('del_work_units', 's', {})
    c('del_work_units', 's', {'work_unit_keys': ['k5', 'nope']})
    c('del_work_units', 's', {'state': 3})
    c('del_work_units', 's', {'work_unit_keys': ['k2', 'k3'], 'state': 3})
    c('count_work_units', 's')
    c('del_work_units', 's', {'all': True})
    c('count_work_units', 's')
    c('del_work_units', 'missing', {'all': True})


@case
def case_update_work_unit(c):
    c('set_work_spec', {'name': 's'})
    c('add_work_units', 's', [('a', {}), ('b', {}), ('c', {})])
    c('get_work', 'w-up', {'max_jobs': 3, 'lease_time': 60})
    c('update_work_unit', 's', 'a', {'lease_time': 120})
    c('get_work_unit_status', 's', ['a'])
    c('update_work_unit', 's', 'a', {'data': {'only': 'data'}})
    c('update_work_unit', 's', 'a', {'status': 4, 'data': {'done': 1}})
    c('update_work_unit', 's', 'a', {'status': 5})
    c('get_work_unit_status', 's', ['a'])
    c('update_work_unit', 's', 'b', {'status': 5,
                                     'data': {'traceback': 'tb'}})
    c('update_work_unit', 's', 'b', {'status': 4})
    c('update_work_unit', 's', 'c', {'status': 1})
    c('update_work_unit', 's', 'c', {'lease_time': -1})
    c('get_work_unit_status', 's', ['b', 'c'])
    c('update_work_unit', 's', 'nope', {'status': 4})
    c('update_work_unit', 'missing', 'a', {'status': 4})
    c('get_work_units', 's', {'state': [4, 5]})


@case
def case_update_null_data(c):
    # Python read `data` with options.get: None is no new data, so the
    # unit keeps (and chains from) the data it had.
    c('set_work_spec', {'name': 'a', 'then': 'b'})
    c('set_work_spec', {'name': 'b'})
    c('add_work_units', 'a', [('k1', {'output': ['o1'], 'x': 1}),
                              ('k2', {'y': 2})])
    c('get_work', 'w-nd', {'max_jobs': 2, 'lease_time': 60})
    c('update_work_unit', 'a', 'k2', {'lease_time': 120, 'data': None})
    c('update_work_unit', 'a', 'k1', {'status': 4, 'data': None})
    c('get_work_units', 'a', {})
    c('get_work_units', 'b', {})


@case
def case_get_work_shapes(c):
    c('get_work', 'w-shape', {})
    c('get_work', 'w-shape', {'max_jobs': 3})
    c('set_work_spec', {'name': 's'})
    c('set_work_spec', {'name': 'p', 'disabled': True})
    c('add_work_units', 'p', [('p1', {})])
    c('get_work', 'w-shape', {})
    c('add_work_units', 's', [('a', {'d': 1}), ('b', {})])
    c('get_work', 'w-shape', {'lease_time': 60})
    c('get_work', 'w-shape', {'max_jobs': 3, 'lease_time': 60})
    c('get_work', 'w-shape', {'max_jobs': 0})
    c('get_work', 'w-shape', {'work_spec_names': ['p']})
    c('control_work_spec', 'p', {'status': 1})
    c('get_work', 'w-shape', {'work_spec_names': ['p'], 'lease_time': 60})
    c('get_work_unit_status', 's', ['a', 'b'])


@case
def case_workers(c):
    c('worker_heartbeat', 'wk-parent', 'RUN', 600, {'pid': 1, 'host': 'h'},
      None)
    c('worker_heartbeat', 'wk-child', 'RUN', 600, {'pid': 2}, 'wk-parent')
    c('worker_heartbeat', 'wk-huge', 'IDLE', 10 ** 6, {}, None)
    c('worker_heartbeat', 'wk-neg', 'IDLE', -5, {}, None)
    c('worker_heartbeat', 'wk-str', 'IDLE', 100.5, {}, None)
    # The warnings show the number as Python's str() did; a null is below
    # every number in Python 2.
    c('worker_heartbeat', 'wk-negf', 'IDLE', -1.0, {}, None)
    c('worker_heartbeat', 'wk-hugef', 'IDLE', 1e20, {}, None)
    c('worker_heartbeat', 'wk-hugef', 'IDLE', 123456789012.5, {}, None)
    c('worker_heartbeat', 'wk-none', 'IDLE', None, {}, None)
    c('worker_heartbeat', 'wk-hugei', 'IDLE', 10 ** 20, {}, None)
    c('list_worker_modes')
    c('mode_counts')
    c('worker_stats', differs=True)
    c('get_child_work_units', 'wk-parent')
    c('get_child_work_units', 'nobody')
    c('get_worker_info', 'nobody')
    c('worker_unregister', 'nobody')
    for w in ('wk-child', 'wk-parent', 'wk-huge', 'wk-neg', 'wk-str',
              'wk-negf', 'wk-hugef', 'wk-none', 'wk-hugei'):
        c('worker_unregister', w)
    c('list_worker_modes')


@case
def case_worker_modes_text_and_bytes(c):
    c('worker_heartbeat', 'wm-1', 'RUN', 600, {}, None)
    c('worker_heartbeat', 'wm-2', u'RUN', 600, {}, None)
    c('mode_counts', differs=True)


@case
def case_worker_expire_string(c):
    c('worker_heartbeat', 'we', 'RUN', '100', {}, None, differs=True)
    c('worker_heartbeat', 'we', 'RUN', 'soon', {}, None, differs=True)


@case
def case_worker_info(c):
    c('worker_heartbeat', 'wi', 'RUN', 600, {'pid': 7}, None)
    c('get_worker_info', 'wi', differs=True)
    c('worker_unregister', 'wi')


@case
def case_archive_and_config(c):
    c('archive', {})
    c('archive')
    c('get_config', differs=True)


@case
def case_unknown_method(c):
    c('no_such_method')
    c('get_work_spec')
    c('get_work_spec', 'a', 'b')


@case
def case_clear(c):
    # Registered last: the Python daemon schedules nothing after clear().
    c('set_work_spec', {'name': 'a'})
    c('set_work_spec', {'name': 'b'})
    c('clear')
    c('list_work_specs', {})
    c('set_work_spec', {'name': 'c'})
    c('add_work_units', 'c', [('k', {})])
    c('get_work', 'w-clear', {'lease_time': 60}, differs=True)


def test_table_lists_only_cases():
    from test_random_ops import CASE_ID as random_case
    ids = set(cid for cid, _, _ in CASES) | set([random_case])
    unknown = sorted(set(allowed_differences()) - ids)
    assert not unknown, ('docs/compat.md lists comparison cases that do not '
                         'exist: %s' % ', '.join(unknown))


def _run(c, fn):
    # Not clear(): in the Python daemon it replaces the spec table the
    # scheduler holds, and get_work finds nothing afterwards (compat.md
    # section 15 #33); case_clear, the last case, shows that.
    specs, _ = c.tm._rpc('list_work_specs', ({},))
    for spec in specs:
        c.tm._rpc('del_work_spec', (spec['name'],))
    # Workers outlive specs (a coordinate_worker's registrations too).
    workers, _ = c.tm._rpc('list_worker_modes', ())
    for worker_id in workers:
        c.tm._rpc('worker_unregister', (worker_id,))
    fn(c)


@pytest.mark.parametrize('case_id,fn,parallel', CASES,
                         ids=[cid for cid, _, _ in CASES])
def test_compare(daemons, case_id, fn, parallel):
    py, ours = daemons
    assert ours.alive(), 'coordinated died; log:\n' + ours.log()
    rec_py, rec_ours = Recorder(py.address), Recorder(ours.address)
    try:
        if parallel:
            errors = []

            def target(rec):
                try:
                    _run(rec, fn)
                except Exception as ex:  # pragma: no cover
                    errors.append(ex)
            threads = [threading.Thread(target=target, args=(r,))
                       for r in (rec_py, rec_ours)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            assert not errors, errors
        else:
            _run(rec_py, fn)
            _run(rec_ours, fn)
    finally:
        rec_py.close()
        rec_ours.close()
    unexpected, stale, marked = compare(rec_py.replies, rec_ours.replies)
    listed = case_id in allowed_differences()
    assert not unexpected, (
        'case %s differs from the Python daemon where it is not marked '
        'differs=True (a difference we keep must be marked and listed, with '
        'its reason, in the table of docs/compat.md):\n  %s'
        % (case_id, '\n  '.join(unexpected)))
    assert not stale, ('case %s: these calls are marked as differing but now '
                       'answer alike; drop the mark (and the compat.md row if '
                       'none is left):\n  %s' % (case_id, '\n  '.join(stale)))
    assert marked == listed, (
        'case %s %s calls marked differs=True but is %s in the table of '
        'docs/compat.md' % (case_id, 'has' if marked else 'has no',
                            'not' if marked else 'still'))
