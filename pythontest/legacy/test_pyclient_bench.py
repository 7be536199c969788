"""scripts/pyclient_bench.py, run small against the suites' daemon so the
benchmark of real Python workers (make perf-python) keeps working."""
from __future__ import absolute_import

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'scripts'))

import pyclient_bench  # noqa: E402
from coordinate.constants import FINISHED  # noqa: E402


def test_bench_finishes_every_unit_once(coordinated_address):
    rate, p50, p99, counts = pyclient_bench.run(coordinated_address, 60, 2)
    assert counts == {FINISHED: 60}
    assert rate > 0 and 0 < p50 <= p99
