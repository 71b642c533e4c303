// SPDX-License-Identifier: BSD-3-Clause
// peer.mjs - node-redlock (redlock 5 beta), redis-semaphore's Mutex and
// redis-semaphore's Semaphore, all over ioredis, through the workloads of
// scripts/bench_peers.sh,
// printing one JSON object per run on one line (the same keys as
// bench/peers/py/peer_redispy.py; see bench/peers/README.md).
//
//   node peer.mjs --lib redlock|semaphore|sem --port P [--prefix S]
//                 [--permits P] WORKLOAD [options]
//
//   uncontended --ops K
//   contended --procs N --ops K [--think-us T] [--max-seconds S]
//             [--hold-us H] (sem: the holder's pause; locks: none)
//   handoff --ops K [--hold-us H] [--max-seconds S]
//   many --procs T --locks L --seconds S
//
// Every process (N of them in contended, 2 in handoff, T in many) is a
// separate OS process (child_process.fork of this file), with its own
// ioredis connection and lock objects.
//
// Settings: redlock's defaults (retryDelay 200 ms, retryJitter 100 ms,
// driftFactor 0.01) except retryCount -1 (retry forever; its default of 10
// retries gives up after about 2 s, and a contended waiter would throw);
// the lock's duration is 10000 ms (redlock has no default). redis-semaphore's
// Mutex with its defaults (lockTimeout 10 s refreshed every 8 s,
// retryInterval 10 ms, acquireTimeout 10 s). --lib sem: redis-semaphore's
// Semaphore of --permits P permits (default 1), the same defaults; in
// contended its holders count themselves in a holders key (INCR, an answer
// above P is an overlap), hold H us and count themselves out (DECR), as
// rlock-bench semaphore does.
import { fork } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Redis from "ioredis";
import Redlock, { ResourceLockedError } from "redlock";
import { Mutex, Semaphore } from "redis-semaphore";

const SELF = fileURLToPath(import.meta.url);
const now = () => process.hrtime.bigint(); // CLOCK_MONOTONIC, in ns
const LIBS = { redlock: "node-redlock", semaphore: "redis-semaphore",
  sem: "redis-semaphore Semaphore" };
const REDLOCK_DURATION_MS = 10000;

function parseArgs(argv) {
  const a = {
    lib: null, port: null, prefix: null, workload: null, ops: 2000, procs: 4,
    thinkUs: 0, holdUs: null, maxSeconds: 10, locks: 1000, seconds: 3,
    child: null, shared: null, permits: 1,
  };
  const num = { "--port": "port", "--ops": "ops", "--procs": "procs",
    "--think-us": "thinkUs", "--hold-us": "holdUs",
    "--max-seconds": "maxSeconds", "--locks": "locks",
    "--seconds": "seconds", "--child": "child", "--permits": "permits" };
  const str = { "--lib": "lib", "--prefix": "prefix", "--shared": "shared" };
  for (let i = 0; i < argv.length; i++) {
    const w = argv[i];
    if (w in num) a[num[w]] = Number(argv[++i]);
    else if (w in str) a[str[w]] = argv[++i];
    else if (!w.startsWith("-") && a.workload === null) a.workload = w;
    else throw new Error(`peer.mjs: unexpected argument '${w}'`);
  }
  if (!(a.lib in LIBS)) throw new Error("peer.mjs: --lib redlock|semaphore|sem");
  if (!(a.permits >= 1)) throw new Error("peer.mjs: --permits P (1 or more)");
  if (a.permits !== 1 && a.lib !== "sem")
    throw new Error("peer.mjs: --permits is for --lib sem");
  if (!a.port) throw new Error("peer.mjs: --port P");
  if (!["uncontended", "contended", "handoff", "many"].includes(a.workload))
    throw new Error("peer.mjs: workload uncontended|contended|handoff|many");
  if (a.prefix === null) a.prefix = `peer:${a.lib}:`;
  return a;
}

// Percentile by linear interpolation, as rlock-bench's stats.c.
function pct(v, p) {
  if (v.length === 0) return null;
  const s = [...v].sort((x, y) => x - y);
  const pos = (p / 100) * (s.length - 1);
  const lo = Math.floor(pos), hi = Math.min(lo + 1, s.length - 1);
  return s[lo] + (pos - lo) * (s[hi] - s[lo]);
}
const us = (ns) => (ns === null ? null : Math.round(ns / 100) / 10);

// A synchronous sleep of t us (think and hold times: setTimeout cannot
// sleep less than 1 ms).
const sleepCell = new Int32Array(new SharedArrayBuffer(4));
function sleepUs(t) {
  if (t > 0) Atomics.wait(sleepCell, 0, 0, t / 1000);
}

// The lock API shared by both libraries: make(name) -> {acquire, release}.
function makeLocks(a, client) {
  if (a.lib === "redlock") {
    const redlock = new Redlock([client], { retryCount: -1 });
    // Documented: a lock held elsewhere is reported as an "error" event
    // (ResourceLockedError) on every failed attempt; ignore those.
    redlock.on("error", (e) => {
      if (!(e instanceof ResourceLockedError)) console.error(e);
    });
    return (name) => {
      let held = null;
      return {
        acquire: async () => {
          held = await redlock.acquire([name], REDLOCK_DURATION_MS);
        },
        release: async () => {
          await held.release();
          held = null;
        },
      };
    };
  }
  if (a.lib === "sem") {
    return (name) => {
      const m = new Semaphore(client, name, a.permits);
      return { acquire: () => m.acquire(), release: () => m.release() };
    };
  }
  return (name) => {
    const m = new Mutex(client, name);
    return { acquire: () => m.acquire(), release: () => m.release() };
  };
}

function connect(a) {
  return new Redis({ host: "127.0.0.1", port: a.port, lazyConnect: false });
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

// ---- shared file: release time (offset 0) and acquisition count (8) ------
function putShared(fd, off, val) {
  const b = Buffer.alloc(8);
  b.writeBigInt64LE(BigInt(val));
  fs.writeSync(fd, b, 0, 8, off);
}
function getShared(fd, off) {
  const b = Buffer.alloc(8);
  fs.readSync(fd, b, 0, 8, off);
  return b.readBigInt64LE();
}

// ---- parent: fork the processes, start them together, gather ------------
async function runProcs(a, n, extra) {
  const kids = [];
  for (let i = 0; i < n; i++) {
    const args = [...process.argv.slice(2), "--child", String(i), ...extra];
    const kid = fork(SELF, args, { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    const ready = new Promise((res) => kid.once("message", res));
    const result = new Promise((res) => {
      let got = null;
      kid.on("message", (m) => { if (m && m.result) got = m.result; });
      kid.on("exit", (code) => res(got ?? { error: `exited ${code} without a result` }));
    });
    kids.push({ kid, ready, result });
  }
  await Promise.all(kids.map((k) => k.ready));
  const start = now();
  for (const k of kids) k.kid.send("go");
  const results = await Promise.all(kids.map((k) => k.result));
  return { results, start };
}

function childReady() {
  return new Promise((res) => {
    process.once("message", res);
    process.send("ready");
  });
}

async function childDone(client, result) {
  client.disconnect();
  await new Promise((res) => process.send({ result }, res));
  process.exit(0);
}

// ---- workloads -------------------------------------------------------------
async function uncontended(a) {
  const client = connect(a);
  const pings = [];
  for (let i = 0; i < 1000; i++) {
    const t0 = now();
    await client.ping();
    pings.push(Number(now() - t0));
  }
  const lock = makeLocks(a, client)(a.prefix + "unc");
  for (let i = 0; i < 100; i++) {
    await lock.acquire();
    await lock.release();
  }
  const lat = [];
  const tStart = now();
  for (let i = 0; i < a.ops; i++) {
    const t0 = now();
    await lock.acquire();
    await lock.release();
    lat.push(Number(now() - t0));
  }
  const elapsed = Number(now() - tStart) / 1e9;
  client.disconnect();
  emit({ workload: "uncontended", lib: LIBS[a.lib], ops: a.ops,
    ping_rtt_us: us(pct(pings, 50)),
    lock_unlock_p50_us: us(pct(lat, 50)), lock_unlock_p99_us: us(pct(lat, 99)),
    pairs_per_s: Math.round(a.ops / elapsed) });
}

async function contendedChild(a) {
  const client = connect(a);
  const lock = makeLocks(a, client)(a.prefix + "con");
  const counter = a.prefix + "counter", holders = a.prefix + "holders";
  const fd = fs.openSync(a.shared, "r+");
  await client.ping();
  await childReady();
  const deadline = now() + BigInt(Math.round(a.maxSeconds * 1e9));
  const hand = [], waits = [];
  let done = 0, overlaps = 0, errors = 0, first = null, last = null, error;
  while (done < a.ops && now() < deadline) {
    const waited = now();
    try {
      await lock.acquire();
    } catch (e) { // redis-semaphore: acquireTimeout; count it, try again
      errors++;
      error = String(e);
      continue;
    }
    const got = now();
    waits.push(Number(got - waited));
    const rel = getShared(fd, 0);
    if (rel > waited) hand.push(Number(got - rel));
    if (a.lib === "sem") { // count in, hold, count out
      if ((await client.incr(holders)) > a.permits) overlaps++;
      sleepUs(a.holdUs ?? 0);
      await client.decr(holders);
    } else {
      // Non-atomic GET + SET; INCR/DECR of a holder count ride along.
      const [[, v], [, h]] = await client.pipeline().get(counter).incr(holders).exec();
      if (h > 1) overlaps++;
      await client.pipeline().set(counter, Number(v ?? 0) + 1).decr(holders).exec();
    }
    const t = now();
    putShared(fd, 0, t);
    await lock.release();
    done++;
    if (first === null) first = got;
    last = t;
    sleepUs(a.thinkUs);
  }
  await childDone(client, { done, handoffs: hand, waits, overlaps, errors, error,
    first: first === null ? null : String(first),
    last: last === null ? null : String(last) });
}

function waitTurn(fd, me, deadline) {
  while (getShared(fd, 8) % 2n !== BigInt(me)) {
    if (now() > deadline) return false;
    sleepUs(20);
  }
  return true;
}

async function handoffChild(a) {
  const client = connect(a);
  const lock = makeLocks(a, client)(a.prefix + "hand");
  const fd = fs.openSync(a.shared, "r+");
  await client.ping();
  await childReady();
  const deadline = now() + BigInt(Math.round(a.maxSeconds * 1e9));
  const hand = [];
  let done = 0, errors = 0, first = null, last = null, error;
  // Acquisition j is process j % 2's: process 0 takes the lock first.
  while (done < a.ops && now() < deadline) {
    if (!waitTurn(fd, a.child, deadline + 1000000000n)) break;
    const waited = now();
    try {
      await lock.acquire();
    } catch (e) {
      errors++;
      error = String(e);
      continue;
    }
    const got = now();
    const rel = getShared(fd, 0);
    if (rel > waited) hand.push(Number(got - rel));
    putShared(fd, 8, getShared(fd, 8) + 1n); // the other one waits now
    sleepUs(a.holdUs ?? 300);
    const t = now();
    putShared(fd, 0, t);
    await lock.release();
    done++;
    if (first === null) first = got;
    last = t;
  }
  await childDone(client, { done, handoffs: hand, overlaps: 0, errors, error,
    first: first === null ? null : String(first),
    last: last === null ? null : String(last) });
}

async function manyChild(a) {
  const client = connect(a);
  const make = makeLocks(a, client);
  const locks = [];
  for (let k = 0; k < a.locks; k++) locks.push(make(`${a.prefix}many:${k}`));
  await client.ping();
  await childReady();
  const t0 = now();
  const until = t0 + BigInt(Math.round(a.seconds * 1e9));
  let pairs = 0;
  while (now() < until) {
    const lock = locks[Math.floor(Math.random() * a.locks)];
    await lock.acquire();
    await lock.release();
    pairs++;
  }
  await childDone(client, { pairs, elapsed: Number(now() - t0) });
}

async function turns(a, workload, counter) {
  const shared = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "peer-node.")), "shared");
  fs.writeFileSync(shared, Buffer.alloc(16));
  const client = connect(a);
  await client.del(a.prefix + "counter", a.prefix + "holders");
  const { results, start } = await runProcs(a, a.procs, ["--shared", shared]);
  fs.rmSync(path.dirname(shared), { recursive: true, force: true });
  const errs = results.filter((x) => x.error).map((x) => x.error);
  const ok = results.filter((x) => x.done !== undefined);
  const done = ok.reduce((s, x) => s + x.done, 0);
  const hand = ok.flatMap((x) => x.handoffs);
  const waits = ok.flatMap((x) => x.waits ?? []);
  const ends = ok.filter((x) => x.last !== null).map((x) => BigInt(x.last));
  const end = ends.reduce((m, x) => (x > m ? x : m), start);
  const elapsed = ends.length ? Number(end - start) / 1e9 : null;
  const final = counter ? Number((await client.get(counter)) ?? 0) : null;
  client.disconnect();
  const out = { workload, lib: LIBS[a.lib], procs: a.procs, ops: a.ops,
    think_us: a.thinkUs, acquisitions: done, complete: done === a.procs * a.ops,
    seconds: elapsed === null ? null : Math.round(elapsed * 1000) / 1000,
    acquisitions_per_s: elapsed ? Math.round(done / elapsed) : null,
    handoffs: hand.length, handoff_p50_us: us(pct(hand, 50)),
    handoff_p99_us: us(pct(hand, 99)),
    overlaps: ok.reduce((s, x) => s + x.overlaps, 0),
    lost_updates: final === null ? null : done - final,
    errors: errs.length + ok.reduce((s, x) => s + x.errors, 0) };
  if (workload === "handoff") {
    out.hold_us = a.holdUs ?? 300;
    delete out.think_us; delete out.overlaps; delete out.lost_updates;
  } else {
    out.acquire_p50_us = us(pct(waits, 50));
    out.acquire_p99_us = us(pct(waits, 99));
  }
  if (a.lib === "sem") {
    out.permits = a.permits;
    if (workload === "contended") {
      out.hold_us = a.holdUs ?? 0;
      delete out.lost_updates; // no counter: holders are counted instead
    }
  }
  if (errs.length) out.error = errs[0];
  else if (ok.some((x) => x.error)) out.error = ok.find((x) => x.error).error;
  emit(out);
}

async function many(a) {
  const { results } = await runProcs(a, a.procs, []);
  const errs = results.filter((x) => x.error).map((x) => x.error);
  const ok = results.filter((x) => x.pairs !== undefined);
  const pairs = ok.reduce((s, x) => s + x.pairs, 0);
  const elapsed = Math.max(0, ...ok.map((x) => x.elapsed)) / 1e9;
  const out = { workload: "many", lib: LIBS[a.lib], procs: a.procs,
    locks: a.locks, seconds: Math.round(elapsed * 100) / 100, pairs,
    ops_per_s: elapsed ? Math.round(pairs / elapsed) : null,
    errors: errs.length };
  if (errs.length) out.error = errs[0];
  emit(out);
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  if (a.child !== null) {
    const body = { contended: contendedChild, handoff: handoffChild, many: manyChild };
    return body[a.workload](a);
  }
  if (a.workload === "uncontended") return uncontended(a);
  if (a.workload === "contended")
    return turns(a, "contended", a.lib === "sem" ? null : a.prefix + "counter");
  if (a.workload === "handoff") {
    a.procs = 2;
    return turns(a, "handoff", null);
  }
  return many(a);
}

main().catch((e) => {
  if (process.send) process.send({ result: { error: String(e) } });
  console.error(e);
  process.exit(1);
});
