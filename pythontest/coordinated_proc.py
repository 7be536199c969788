"""Start and stop a coordinated daemon for the Python suites.

Shared by the Python 3 wire suite and the Python 2.7 legacy suite, so this
module is written in the common subset of Python 2.7 and 3.

The daemon binary comes from $COORDINATED_BIN (scripts/pythontest.sh builds
it once); when that is unset it is built here with `go build`. The backend
comes from $COORDINATED_BACKEND ("memory" unless set; a postgres:// URL
selects the PostgreSQL backend).

Readiness is detected by connecting, never by sleeping: we choose a free
port, pass it with -listen, and poll-connect until the daemon accepts.
"""
from __future__ import absolute_import, print_function

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# How long the daemon may take to start accepting, and to exit on SIGTERM.
START_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 20.0


class DaemonError(Exception):
    """The daemon could not be built, started or stopped."""


def free_port():
    """Return a TCP port on 127.0.0.1 that nothing listens on right now."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]
    finally:
        sock.close()


def wait_until_accepting(daemon, args, name,
                         timeout=START_TIMEOUT_SECONDS):
    """Wait until daemon (with .proc, .host, .port, .address, .log() and
    .kill()) accepts connections, and return it. A daemon that exits
    first, or does not accept within timeout, raises DaemonError with
    its log; readiness is detected by connecting, never by sleeping."""
    deadline = time.time() + timeout
    while True:
        if daemon.proc.poll() is not None:
            raise DaemonError('%s exited with status %s before accepting '
                              'connections; args %r; log:\n%s'
                              % (name, daemon.proc.returncode, args,
                                 daemon.log()))
        try:
            socket.create_connection((daemon.host, daemon.port), 1.0).close()
            return daemon
        except socket.error:
            if time.time() > deadline:
                log = daemon.log()
                daemon.kill()
                raise DaemonError('%s did not accept connections on %s '
                                  'within %.0fs; log:\n%s'
                                  % (name, daemon.address, timeout, log))
            time.sleep(0.05)


def daemon_binary(workdir):
    """Return the path of the coordinated binary, building it if needed."""
    path = os.environ.get('COORDINATED_BIN')
    if path:
        if not os.access(path, os.X_OK):
            raise DaemonError('COORDINATED_BIN=%r is not an executable file'
                              % path)
        return path
    path = os.path.join(workdir, 'coordinated')
    proc = subprocess.Popen(['go', 'build', '-o', path, './cmd/coordinated'],
                            cwd=REPO_ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    out = proc.communicate()[0]
    if proc.returncode != 0:
        raise DaemonError('go build ./cmd/coordinated failed:\n%s'
                          % out.decode('utf-8', 'replace'))
    return path


def backend():
    """The -backend argument: $COORDINATED_BACKEND or "memory"."""
    return os.environ.get('COORDINATED_BACKEND') or 'memory'


class Daemon(object):
    """One running coordinated process on 127.0.0.1.

    Use start() then stop(); `address` is "127.0.0.1:PORT" and `host`,
    `port` its parts. Extra command-line flags go in `extra_args`;
    `backend_arg` overrides the -backend value of backend().
    """

    def __init__(self, config_path=None, extra_args=(), binary=None,
                 backend_arg=None, argv=None, sync=None):
        # argv, when given, replaces all the default flags (for starting
        # the daemon with the Python daemon's own command line); "{port}"
        # in it stands for the port chosen at start.
        self.argv = argv
        self.backend_arg = backend_arg or backend()
        # sync: a -sync policy, as $COORDINATED_SYNC (storage_args).
        self.sync = sync
        self.workdir = tempfile.mkdtemp(prefix='coordinated-pytest-')
        self.binary = binary or daemon_binary(self.workdir)
        self.config_path = config_path
        self.extra_args = list(extra_args)
        self.host = '127.0.0.1'
        self.port = None
        self.proc = None
        self.log_path = os.path.join(self.workdir, 'coordinated.log')
        self._log = None

    @property
    def address(self):
        return '%s:%d' % (self.host, self.port)

    def start(self):
        """Start the daemon and wait until it accepts connections."""
        self.port = free_port()
        if self.argv is not None:
            args = [self.binary] + [a.replace('{port}', str(self.port))
                                    for a in self.argv]
        else:
            args = [self.binary, '-listen', self.address,
                    '-backend', self.backend_arg] + self.storage_args()
            if self.config_path:
                args += ['-config', self.config_path]
            args += self.extra_args
        self._log = open(self.log_path, 'wb')
        self.proc = subprocess.Popen(args, stdout=self._log,
                                     stderr=subprocess.STDOUT)
        return wait_until_accepting(self, args, 'coordinated')

    def storage_args(self):
        """The memory backend's storage flags: volatile (-data-dir ''),
        unless the daemon's `sync` or else $COORDINATED_SYNC names a -sync
        policy, then durable in a data directory of the daemon's own."""
        sync = self.sync or os.environ.get('COORDINATED_SYNC')
        if not sync:
            return ['-data-dir', '']
        return ['-data-dir', os.path.join(self.workdir, 'data'),
                '-sync', sync]

    def log(self):
        """The daemon's output so far, as text."""
        try:
            with open(self.log_path, 'rb') as f:
                return f.read().decode('utf-8', 'replace')
        except IOError:
            return '<no log>'

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """SIGTERM the daemon and wait (bounded) for it to exit.

        Returns the exit status. A daemon that ignores SIGTERM is killed and
        DaemonError is raised, since a clean shutdown is part of the contract.
        """
        if self.proc is None:
            return None
        status = self.proc.poll()
        if status is None:
            self.proc.send_signal(signal.SIGTERM)
            deadline = time.time() + STOP_TIMEOUT_SECONDS
            while self.proc.poll() is None and time.time() < deadline:
                time.sleep(0.05)
            status = self.proc.poll()
            if status is None:
                self.kill()
                raise DaemonError('coordinated did not exit within %.0fs of '
                                  'SIGTERM; killed it' % STOP_TIMEOUT_SECONDS)
        self._cleanup()
        return status

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._cleanup()

    def _cleanup(self):
        if self._log is not None:
            self._log.close()
            self._log = None
        if os.environ.get('COORDINATED_KEEP_LOGS'):
            return
        shutil.rmtree(self.workdir, ignore_errors=True)
