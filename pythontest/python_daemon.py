"""Start and stop the real Python coordinate daemon (the oracle).

The Python daemon is `coordinated` from the PyPI package coordinate==0.1.5,
installed in the Python 2.7 venv that scripts/pythontest.sh builds
(.venv-py27/bin/coordinated). Suites that compare our daemon with it, or
import its snapshots, start it through this module. Written in the common
subset of Python 2.7 and 3, like coordinated_proc.py.

$PYTHON_COORDINATED names another binary. A missing binary is an error,
never a skip: the comparison is part of the test command.
"""
from __future__ import absolute_import, print_function

import os
import shutil
import signal
import subprocess
import tempfile
import time

from coordinated_proc import (REPO_ROOT, DaemonError, free_port,
                              wait_until_accepting)

START_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 20.0


def python_daemon_binary():
    """Path of the Python daemon's `coordinated` entry point."""
    path = os.environ.get('PYTHON_COORDINATED') or os.path.join(
        REPO_ROOT, '.venv-py27', 'bin', 'coordinated')
    if not os.access(path, os.X_OK):
        raise DaemonError('the Python coordinated daemon is not at %r (run '
                          'scripts/pythontest.sh once to build .venv-py27, '
                          'or set PYTHON_COORDINATED)' % path)
    return path


class PythonDaemon(object):
    """One running Python `coordinated` on 127.0.0.1.

    `extra_args` are appended to `--host 127.0.0.1 --port PORT` (for
    example ['--snapshot-dir', d] or ['-c', 'config.yaml']). `address`
    is "127.0.0.1:PORT" once started.
    """

    def __init__(self, extra_args=(), cwd=None):
        self.extra_args = list(extra_args)
        self.workdir = tempfile.mkdtemp(prefix='python-coordinated-')
        self.cwd = cwd or self.workdir
        self.host = '127.0.0.1'
        self.port = None
        self.proc = None
        self.log_path = os.path.join(self.workdir, 'python-coordinated.log')
        self._log = None

    @property
    def address(self):
        return '%s:%d' % (self.host, self.port)

    def start(self):
        """Start the daemon and wait until it accepts connections."""
        self.port = free_port()
        args = [python_daemon_binary(), '--host', self.host,
                '--port', str(self.port)] + self.extra_args
        self._log = open(self.log_path, 'wb')
        self.proc = subprocess.Popen(args, stdout=self._log,
                                     stderr=subprocess.STDOUT, cwd=self.cwd)
        return wait_until_accepting(self, args, 'Python coordinated',
                                    START_TIMEOUT_SECONDS)

    def log(self):
        """The daemon's output so far, as text."""
        try:
            with open(self.log_path, 'rb') as f:
                return f.read().decode('utf-8', 'replace')
        except IOError:
            return '<no log>'

    def stop(self, sig=signal.SIGTERM):
        """Signal the daemon (SIGTERM by default) and wait for it to exit.

        Returns the exit status; a daemon still running after
        STOP_TIMEOUT_SECONDS is killed. The work directory is kept until
        cleanup() so that tests can read snapshots written into it.
        """
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            deadline = time.time() + STOP_TIMEOUT_SECONDS
            while self.proc.poll() is None and time.time() < deadline:
                time.sleep(0.05)
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        return self.proc.returncode

    def kill(self):
        return self.stop(signal.SIGKILL)

    def cleanup(self):
        """Stop the daemon and remove its work directory."""
        self.stop()
        if not os.environ.get('COORDINATED_KEEP_LOGS'):
            shutil.rmtree(self.workdir, ignore_errors=True)
