"""Fixtures of the comparison suite: the real Python daemon and ours.

One Python daemon (volatile, as it always was) and one coordinated (the
backend of $COORDINATED_BACKEND) per session; every case clears both
before it runs.
"""
from __future__ import absolute_import, print_function

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import coordinated_proc  # noqa: E402
import python_daemon  # noqa: E402


@pytest.fixture(scope='session')
def daemons():
    """(Python daemon, coordinated), both running."""
    py = python_daemon.PythonDaemon().start()
    ours = None
    try:
        ours = coordinated_proc.Daemon().start()
        yield py, ours
    finally:
        if ours is not None:
            status = ours.stop()
            assert status == 0, 'coordinated exited with %r; log:\n%s' % (
                status, ours.log())
        py.cleanup()
