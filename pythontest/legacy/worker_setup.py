"""What test_cli.py and test_go_worker.py need to start coordinate_worker."""
from __future__ import absolute_import

import os

HERE = os.path.dirname(os.path.abspath(__file__))


def fork_worker_config(tmpdir, address):
    """Write a coordinate_worker config for the daemon at address into
    tmpdir: two fork workers polling and spawning quickly."""
    config = tmpdir.join('worker.yaml')
    config.write("""\
coordinate:
  address: "%s"
  default_lifetime: 60
  fork_worker:
    num_workers: 2
    poll_interval: 0.2
    spawn_interval: 0.05
    heartbeat_interval: 1
    child_lifetime: 2
""" % address)
    return config


def worker_env():
    """The environment for a worker that imports this directory's task
    modules (chain_tasks, go_flow_tasks)."""
    env = dict(os.environ)
    env['PYTHONPATH'] = HERE + os.pathsep + env.get('PYTHONPATH', '')
    return env
