"""Python run functions for test_go_worker.py: a flow that crosses from a
Python spec to a Go spec (examples/worker's "shout") and back. Python 2.7;
imported by `coordinate_worker` by name, so pythontest/legacy must be on
the worker's PYTHONPATH.
"""
from __future__ import absolute_import


def _once(work_unit):
    if 'done_by' in work_unit.data:
        raise Exception('%s done twice (first by %s)'
                        % (work_unit.key, work_unit.data['done_by']))
    work_unit.data['done_by'] = 'python'


def run_a(work_unit):
    """Python first step: one unit for the Go spec that follows."""
    _once(work_unit)
    work_unit.data['output'] = {
        work_unit.key + '-b': {'text': 'hello ' + work_unit.key},
    }


def run_c(work_unit):
    """Python last step: takes what the Go task shouted."""
    _once(work_unit)
    work_unit.data['heard'] = work_unit.data['text']


def run_solo(work_unit):
    _once(work_unit)
