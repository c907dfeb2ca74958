"""``asyncapi-kafka serve``: a warm process that runs ``peek`` commands for the command line.

A ``peek`` in a fresh interpreter spends most of its CPU before its first record: importing
numpy, pyarrow and the connector, then numba and numba's compiler context (0.35 s of CPU on
its own: more than a whole confluent-kafka consumer script). ``serve`` pays that once: it imports
all of it, then waits on a Unix socket. ``asyncapi-kafka peek`` first looks for a server of this
installation; when one answers, the server forks a child, the child takes the command's
standard input, output and error (passed over the socket), its working directory, environment
and umask, and runs the command exactly as the command line would; the exit code comes back.
No server (or one of another installation or version): ``peek`` runs in its own process, as
before. Each command runs in a fresh fork, so nothing of one command (registry caches, Kafka
clients) is seen by the next.

The socket lives in a directory only this user can use (``$XDG_RUNTIME_DIR/asyncapi-kafka``,
else ``/tmp/asyncapi-kafka-<uid>``, mode 0700), and the server serves only its own user (the
peer's uid is checked). Its name is derived from the interpreter, the package's location and
version, and the settings read at import time (``NUMBA_*``, ``PYTHONPATH``): a server never runs
another installation's code. ``serve`` stops on Ctrl-C or SIGTERM, or after ``--idle`` seconds
without a command; ``asyncapi-kafka sandbox`` runs one for as long as it runs.
"""
from __future__ import annotations

import argparse
import errno
import hashlib
import json
import os
import select
import signal
import socket
import stat
import struct
import sys
import time

__all__ = ["add_serve_arguments", "serve_command", "run_remote", "socket_path"]

_COMMANDS = ("peek",)
_MAX_HEADER = 1 << 20
_served = False  # true in a command's child: it runs the command itself


def socket_path() -> str:
    """The socket of this installation's server (the directory is created, mode 0700)."""
    import connector

    base = os.environ.get("XDG_RUNTIME_DIR")
    directory = os.path.join(base, "asyncapi-kafka") if base else f"/tmp/asyncapi-kafka-{os.getuid()}"
    os.makedirs(directory, mode=0o700, exist_ok=True)
    st = os.lstat(directory)  # not a symlink someone else planted
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(f"{directory} must be a directory of this user with mode 0700")
    key = json.dumps([sys.executable, os.path.dirname(os.path.abspath(connector.__file__)), connector.__version__,
                      sorted((k, v) for k, v in os.environ.items() if k.startswith("NUMBA_") or k == "PYTHONPATH")])
    return os.path.join(directory, hashlib.sha256(key.encode()).hexdigest()[:16] + ".sock")


# -- the client (the command line's own process) ---------------------------------------------
def run_remote(argv: list[str]) -> int | None:
    """Run ``argv`` on this installation's server; its exit code, or None when no server
    answers (the caller then runs the command itself)."""
    if _served or not argv or argv[0] not in _COMMANDS or os.environ.get("ASYNCAPI_KAFKA_NO_SERVER"):
        return None
    try:
        path = socket_path()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
    except OSError:
        return None
    umask = os.umask(0)
    os.umask(umask)
    header = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask}).encode()
    try:
        with sock:
            socket.send_fds(sock, [struct.pack("!I", len(header)) + header], [0, 1, 2])
            answer = _read_all(sock)
    except KeyboardInterrupt:
        return 130  # closing the socket tells the server to interrupt the command
    except OSError:
        return None
    if len(answer) != 4:  # the server went away before the command started or ended
        print("error: the asyncapi-kafka server stopped while running the command", file=sys.stderr)
        return 2
    return struct.unpack("!i", answer)[0]


def _read_all(sock: socket.socket) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = sock.recv(64)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


# -- the server --------------------------------------------------------------------------------
def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``serve`` arguments on ``parser`` (a sub-command parser)."""
    parser.add_argument("--idle", type=float, default=900.0, metavar="SECONDS",
                        help="stop after this long without a command (default 900; 0: never)")


def preload() -> None:
    """Import what ``peek`` runs, and set up numba's compiler context (before any fork)."""
    import importlib

    for name in ("connector.cli._peek", "connector.read", "connector.kafka._native", "connector.formats.avro._vm",
                 "connector.formats.avro._assemble_kernels", "connector.formats.json_schema._decode",
                 "connector.formats.json_schema._kernel", "connector.formats.protobuf._decode",
                 "connector.formats.protobuf._kernel", "registry._http", "requests", "yaml"):
        importlib.import_module(name)
    from numba.core.registry import cpu_target

    from connector.cli._process import pyarrow_without_pandas
    from connector.formats.core import load_cached

    pyarrow_without_pandas()
    cpu_target.target_context.refresh()
    load_cached()  # the kernels this machine compiled already; nothing compiles here


def serve_command(args: argparse.Namespace, run, ready=None) -> int:
    """Serve until interrupted or idle: each command runs ``run()`` (the command line's
    ``main``) in a child; ``ready(path)`` is called once the socket listens."""
    try:
        path = socket_path()
    except PermissionError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
        print(f"a server of this installation already serves peek at {path}", flush=True)
        return 0
    except OSError:
        pass
    finally:
        probe.close()
    preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(path)  # a previous server of this installation that did not clean up
    except FileNotFoundError:
        pass
    listener.bind(path)
    listener.listen(16)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    stop = []

    def _on_signal(signum, frame):
        stop.append(signum)
        try:
            os.write(wake_w, b"x")
        except OSError:
            pass

    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    signal.signal(signal.SIGCHLD, lambda *a: None)  # set_wakeup_fd wakes the loop when a child ends
    old_wakeup = signal.set_wakeup_fd(wake_w)
    running: dict[int, socket.socket] = {}  # child pid -> its client's socket
    by_fd: dict[int, int] = {}  # client socket fd -> child pid
    last = time.monotonic()
    (ready or (lambda p: print(f"serving peek at {p}", flush=True)))(path)
    try:
        poller = select.poll()
        poller.register(listener, select.POLLIN)
        poller.register(wake_r, select.POLLIN)
        while not stop:
            idle_left = args.idle - (time.monotonic() - last) if args.idle and not running else None
            if idle_left is not None and idle_left <= 0:
                break
            events = poller.poll(None if idle_left is None else idle_left * 1000)
            for fd, _ in events:
                if fd == wake_r:
                    os.read(wake_r, 512)
                elif fd == listener.fileno():
                    conn = _accept(listener)
                    if conn is not None:
                        pid = _start(conn, listener, running, (wake_r, wake_w), run)
                        if pid is not None:
                            running[pid] = conn
                            by_fd[conn.fileno()] = pid
                            poller.register(conn, select.POLLIN | select.POLLHUP)
                elif fd in by_fd:  # the client went away (Ctrl-C): interrupt its command
                    _signal(by_fd[fd], signal.SIGINT)
                    poller.unregister(fd)
            for pid, code in _reaped(running):
                conn = running.pop(pid)
                by_fd.pop(conn.fileno(), None)
                try:
                    poller.unregister(conn)
                except KeyError:
                    pass
                try:
                    conn.sendall(struct.pack("!i", code))
                except OSError:
                    pass
                conn.close()
                last = time.monotonic()
    finally:
        signal.set_wakeup_fd(old_wakeup)
        for s, handler in previous.items():
            signal.signal(s, handler)
        for pid in running:
            _signal(pid, signal.SIGTERM)
        listener.close()
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    return 0


def _accept(listener: socket.socket) -> socket.socket | None:
    try:
        conn, _ = listener.accept()
    except OSError:
        return None
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    if uid != os.getuid():  # the directory's mode already keeps others out; this is the check
        conn.close()
        return None
    return conn


def _start(conn: socket.socket, listener: socket.socket, running: dict, wakeup: tuple[int, int],
           run) -> int | None:
    """Read the command and fork its child; the child's pid (None when the request is bad)."""
    try:
        conn.settimeout(10)
        data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
        if len(fds) != 3 or len(data) < 4:
            raise ValueError("no descriptors")
        size = struct.unpack("!I", data[:4])[0]
        if size > _MAX_HEADER:
            raise ValueError("header too large")
        data = data[4:]
        while len(data) < size:
            more = conn.recv(size - len(data))
            if not more:
                raise ValueError("short header")
            data += more
        request = json.loads(data)
        conn.settimeout(None)
    except (OSError, ValueError):
        conn.close()
        return None
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        return pid
    # the child: becomes the command
    global _served
    _served = True
    code = 70
    try:
        listener.close()
        for other in running.values():
            other.close()
        conn.close()
        signal.set_wakeup_fd(-1)
        for fd in wakeup:
            os.close(fd)
        for s in (signal.SIGTERM, signal.SIGCHLD):
            signal.signal(s, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = os.fdopen(0, "r", closefd=False)
        sys.stdout = os.fdopen(1, "w", closefd=False)
        sys.stderr = os.fdopen(2, "w", closefd=False)
        os.chdir(request["cwd"])
        os.umask(int(request["umask"]))
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = ["asyncapi-kafka", *request["argv"]]
        code = run()  # as the command line's own process runs it
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    except BaseException:  # noqa: BLE001 - the child must never return into the server's loop
        import traceback

        traceback.print_exc()
        code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:
            pass
        os._exit(code)


def _reaped(running: dict) -> list[tuple[int, int]]:
    out = []
    for pid in list(running):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            out.append((pid, 70))
            continue
        if done:
            out.append((pid, os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)))
    return out


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError as e:
        if e.errno != errno.ESRCH:
            raise
