# SPDX-License-Identifier: BSD-3-Clause
"""A lock shared with the rlock CLI and with a C program, both ways."""
from __future__ import annotations

import subprocess

import rlock
from conftest import Server, wait_for


def subscribers(server: Server, name: str) -> int:
    """Clients subscribed to the lock's unlock channel: a waiter."""
    r = server.cmd("PUBSUB", "NUMSUB", f"redisson_lock__channel:{{{name}}}")
    return int(r[1])


def test_cli_holds_python_waits(client: rlock.Client, server: Server,
                                rlock_cli: str, name: str) -> None:
    p = subprocess.Popen([rlock_cli, "-u", server.url, "exec", name, "--",
                          "sh", "-c", "echo held; read x"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout is not None and p.stdin is not None
    assert p.stdout.readline() == "held\n"
    lock = client.lock(name)
    assert lock.acquire(blocking=False) is False
    assert lock.inspect().holders[0].owner != client.owner
    p.stdin.write("go\n")
    p.stdin.close()
    assert lock.acquire(timeout=10)  # woken by the CLI's release
    assert p.wait(10) == 0
    lock.release()


def test_python_holds_cli_waits(client: rlock.Client, server: Server,
                                rlock_cli: str, name: str) -> None:
    lock = client.lock(name)
    lock.acquire()
    r = subprocess.run([rlock_cli, "-u", server.url, "exec", "-w", "0",
                        name, "--", "true"], capture_output=True, text=True)
    assert r.returncode == 75, r.stderr  # not acquired
    p = subprocess.Popen([rlock_cli, "-u", server.url, "exec", "-w", "20s",
                          name, "--", "echo", "ran"], stdout=subprocess.PIPE,
                         text=True)
    wait_for(lambda: subscribers(server, name) >= 1, what="the CLI to wait")
    assert p.poll() is None
    lock.release()
    out, _ = p.communicate(timeout=20)
    assert p.returncode == 0 and out == "ran\n"


def test_c_program_holds_python_waits(client: rlock.Client, server: Server,
                                      c_peer: str, name: str) -> None:
    p = subprocess.Popen([c_peer, server.url, name, "0"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout is not None and p.stdin is not None
    assert p.stdout.readline() == "acquired\n"
    lock = client.fair_lock(name)  # a fair lock object honours it too
    assert lock.acquire(blocking=False) is False
    p.stdin.close()
    # A plain lock's release publishes on the plain lock's channel, which a
    # fair waiter does not hear (as in Redisson): take it once it is free.
    assert p.stdout.read() == "released\n" and p.wait(10) == 0
    assert lock.acquire(timeout=10)
    lock.release()


def test_python_holds_c_program_waits(client: rlock.Client, server: Server,
                                      c_peer: str, name: str) -> None:
    lock = client.lock(name)
    lock.acquire()
    r = subprocess.run([c_peer, server.url, name, "0"], input="",
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "not-acquired\n", r.stderr
    p = subprocess.Popen([c_peer, server.url, name, "20000"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout is not None and p.stdin is not None
    wait_for(lambda: subscribers(server, name) >= 1, what="C to wait")
    lock.release()
    assert p.stdout.readline() == "acquired\n"
    assert lock.acquire(blocking=False) is False
    p.stdin.close()
    assert p.wait(10) == 0
    assert lock.acquire(timeout=10)
    lock.release()
