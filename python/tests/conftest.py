# SPDX-License-Identifier: BSD-3-Clause
"""Fixtures: real redis-server processes on free loopback ports (a single
server, three independent ones, a Cluster of three masters, a Sentinel
setup), each started here, waited for with PING, and stopped by its pid at
teardown; and the tree's C programs (the rlock CLI, a small C peer).

RLOCK_BUILD_DIR names the build directory the package was built against
(its `rlock` binary and librlock); without it an installed `rlock` on PATH
and pkg-config's librlock are used, or the tests that need them skip.
"""
from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from typing import Any, Iterator, List, Optional

import pytest

import rlock

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.dirname(os.path.dirname(HERE))
SCALE = float(os.environ.get("RLOCK_TEST_TIME_SCALE", "1"))

# A suite started as a background job (`cmd &` in a script, nohup) inherits
# SIGINT ignored, and Python then installs no KeyboardInterrupt handler, in
# this process or in the children the tests start. Ctrl-C is what
# test_interrupt checks, so give SIGINT Python's handler as an interactive
# start would (a handled signal is reset to the default at exec, so the
# children get theirs too).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _read_reply(f: Any) -> Any:
    line = f.readline()
    if not line:
        raise ConnectionError("connection closed")
    t, rest = line[:1], line[1:-2]
    if t == b"+":
        return rest.decode()
    if t == b"-":
        raise RuntimeError(rest.decode())
    if t == b":":
        return int(rest)
    if t == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)[:-2]
        return data.decode("utf-8", "replace")
    if t == b"*":
        n = int(rest)
        return None if n < 0 else [_read_reply(f) for _ in range(n)]
    raise RuntimeError(f"bad reply {line!r}")


class Conn:
    """A minimal RESP connection for the tests' own commands."""

    def __init__(self, port: int, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout)
        self.f = self.sock.makefile("rb")

    def cmd(self, *args: Any) -> Any:
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            b = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(b), b))
        self.sock.sendall(b"".join(out))
        return _read_reply(self.f)

    def close(self) -> None:
        self.f.close()
        self.sock.close()


def resp(port: int, *args: Any) -> Any:
    c = Conn(port)
    try:
        return c.cmd(*args)
    finally:
        c.close()


def wait_for(cond: Any, timeout: float = 10.0, what: str = "condition"
             ) -> Any:
    """Poll cond() until it is truthy (returned) or fail after timeout."""
    deadline = time.monotonic() + timeout * SCALE
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = cond()
            if last:
                return last
        except (OSError, RuntimeError) as e:
            last = e
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


class Server:
    """One redis-server (or sentinel) process, stopped by its pid."""

    def __init__(self, base: str, args: List[str], sentinel_conf: str = ""
                 ) -> None:
        self.dir = tempfile.mkdtemp(prefix="srv.", dir=base)
        self.port = free_port()
        argv = ["redis-server"]
        if sentinel_conf:
            conf = os.path.join(self.dir, "sentinel.conf")
            with open(conf, "w") as f:
                f.write(sentinel_conf)
            argv.append(conf)
        argv += ["--port", str(self.port), "--bind", "127.0.0.1",
                 "--dir", self.dir, "--save", "", "--appendonly", "no",
                 "--protected-mode", "no",
                 "--logfile", os.path.join(self.dir, "log")] + args
        if sentinel_conf:
            argv.append("--sentinel")
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: self.proc.poll() is None and
                     resp(self.port, "PING") == "PONG", 10,
                     f"redis-server on port {self.port}")
        except AssertionError:
            self.stop()
            raise

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def cmd(self, *args: Any) -> Any:
        return resp(self.port, *args)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def workdir() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="rlock-pytest.")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def server(workdir: str) -> Iterator[Server]:
    s = Server(workdir, [])
    yield s
    s.stop()


@pytest.fixture(scope="session")
def servers3(workdir: str) -> Iterator[List[Server]]:
    """Three independent servers (RedLock)."""
    ss: List[Server] = []
    try:
        for _ in range(3):
            ss.append(Server(workdir, []))
        yield ss
    finally:
        for s in ss:
            s.stop()


@pytest.fixture(scope="session")
def cluster(workdir: str) -> Iterator[List[Server]]:
    """A Redis Cluster of three masters (no replicas), built with plain
    commands as tests/support/rt_cluster.c does."""
    nodes: List[Server] = []
    try:
        for _ in range(3):
            nodes.append(Server(workdir, [
                "--cluster-enabled", "yes", "--cluster-config-file",
                "nodes.conf", "--cluster-node-timeout", "1500",
                "--cluster-port", str(free_port())]))
        for i, n in enumerate(nodes):
            n.cmd("CLUSTER", "SET-CONFIG-EPOCH", i + 1)
        for n in nodes[1:]:
            nodes[0].cmd("CLUSTER", "MEET", "127.0.0.1", n.port,
                         n.cmd("CONFIG", "GET", "cluster-port")[1])
        share = 16384 // 3
        for i, n in enumerate(nodes):
            hi = 16383 if i == 2 else (i + 1) * share - 1
            n.cmd("CLUSTER", "ADDSLOTSRANGE", i * share, hi)

        def ok() -> bool:
            for n in nodes:
                info = n.cmd("CLUSTER", "INFO")
                if "cluster_state:ok" not in info or \
                        "cluster_known_nodes:3" not in info:
                    return False
            return True
        wait_for(ok, 30, "the cluster to be ok")
        yield nodes
    finally:
        for n in nodes:
            n.stop()


def cluster_url(nodes: List[Server]) -> str:
    return "redis-cluster://" + ",".join(f"127.0.0.1:{n.port}"
                                         for n in nodes)


@pytest.fixture(scope="session")
def sentinel(workdir: str) -> Iterator[dict]:
    """A master, one replica and two sentinels watching them as
    'pymaster'; yields the URL and the servers."""
    procs: List[Server] = []
    try:
        master = Server(workdir, [])
        procs.append(master)
        replica = Server(workdir, ["--replicaof", "127.0.0.1",
                                   str(master.port)])
        procs.append(replica)
        wait_for(lambda: "master_link_status:up" in replica.cmd(
            "INFO", "replication"), 20, "the replica's link")
        conf = (f"sentinel monitor pymaster 127.0.0.1 {master.port} 1\n"
                "sentinel down-after-milliseconds pymaster 1000\n"
                "sentinel failover-timeout pymaster 3000\n")
        sents = [Server(workdir, [], sentinel_conf=conf) for _ in range(2)]
        procs += sents
        for s in sents:
            wait_for(lambda s=s: s.cmd("SENTINEL", "get-master-addr-by-name",
                                       "pymaster") == ["127.0.0.1",
                                                       str(master.port)],
                     20, "the sentinel to report the master")
            wait_for(lambda s=s: len(s.cmd("SENTINEL", "replicas",
                                           "pymaster")) == 1, 20,
                     "the sentinel to know the replica")
        url = ("redis-sentinel://" + ",".join(f"127.0.0.1:{s.port}"
                                              for s in sents) + "#pymaster")
        yield {"url": url, "master": master, "replica": replica}
    finally:
        for p in reversed(procs):
            p.stop()


@pytest.fixture
def client(server: Server) -> Iterator[rlock.Client]:
    c = rlock.Client(server.url)
    yield c
    c.close()


@pytest.fixture
def name() -> str:
    """A lock name no other test uses."""
    return f"py:{uuid.uuid4().hex[:12]}"


def build_dir() -> Optional[str]:
    d = os.environ.get("RLOCK_BUILD_DIR")
    return os.path.abspath(d) if d else None


@pytest.fixture(scope="session")
def rlock_cli() -> str:
    """The rlock command of the build the package uses (or on PATH)."""
    d = build_dir()
    path = os.path.join(d, "rlock") if d else shutil.which("rlock")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("no rlock binary: set RLOCK_BUILD_DIR to a build with "
                    "the CLI")
    return path


@pytest.fixture(scope="session")
def c_peer(workdir: str) -> str:
    """tests/c_peer.c built against the same librlock as the package."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build tests/c_peer.c")
    d = build_dir()
    if d:
        flags = [f"-I{os.path.join(TREE, 'include')}", f"-L{d}",
                 f"-Wl,-rpath,{d}", "-lrlock"]
    else:
        out = subprocess.run(["pkg-config", "--cflags", "--libs", "rlock"],
                             capture_output=True, text=True, check=True)
        flags = shlex.split(out.stdout)
    exe = os.path.join(workdir, "c_peer")
    cmd = [cc, "-std=c11", "-Wall", "-Werror", "-o", exe,
           os.path.join(HERE, "c_peer.c")] + flags
    if os.environ.get("RLOCK_TEST_CFLAGS"):
        cmd += shlex.split(os.environ["RLOCK_TEST_CFLAGS"])
    subprocess.run(cmd, check=True)
    return exe
