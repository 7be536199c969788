"""Run functions for the chained flow that test_cli.py runs with real workers.

`coordinate_worker` and `coordinate run_one` import this module by name
(the work specs say `module: chain_tasks`), so pythontest/legacy must be on
the workers' PYTHONPATH. Python 2.7.
"""
from __future__ import absolute_import


def run_a(work_unit):
    """Spec A: hand one unit to the `then` spec B, named after this one."""
    work_unit.data['output'] = {
        work_unit.key + '-b': {'from': work_unit.key},
    }


def run_b(work_unit):
    """Spec B: mark the unit as done by this function."""
    work_unit.data['done_by'] = 'run_b'
