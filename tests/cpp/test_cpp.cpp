// SPDX-License-Identifier: BSD-3-Clause
// Integration: include/rlock.hpp, the C++ wrappers, against real
// redis-servers started by the (C) harness. The Lockable contract under
// std::scoped_lock from several threads (no lost update on a counter kept
// in Redis, no two threads inside at once), std::unique_lock's timed
// forms, moves, the mapping of status codes to exceptions, and every kind
// of lock through its wrapper.
//
// The tests run under cmocka like the C suites. A C++ test body runs
// inside run(), which turns a failed CHECK (an exception) or any
// unexpected exception into cmocka's failure once the body's objects are
// destroyed, so cmocka's longjmp never crosses a C++ destructor. Worker
// threads record failures in a `failures` the test checks after joining.
#include <rlock.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csetjmp>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <unistd.h>

// Last: cmocka.h defines macros (fail(), ...) that the standard headers'
// own names would collide with.
extern "C" {
#include <cmocka.h>

#include "rt_server.h"
#include "rt_util.h"
}

using namespace std::chrono_literals;
using std::chrono::milliseconds;

namespace {

rt_server *srv; // the binary's shared server (group setup)

// ---- checks -----------------------------------------------------------------

struct test_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <class... A> std::string str(const A &...a) {
  std::ostringstream o;
  (void)(o << ... << a);
  return o.str();
}

[[noreturn]] void fail_at(const char *file, int line, const char *what,
                          const std::string &why) {
  throw test_failure(
      str(file, ":", line, ": ", what, (why.empty() ? "" : ": "), why));
}

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond))                                                               \
      fail_at(__FILE__, __LINE__, "CHECK(" #cond ") failed",                   \
              str(__VA_ARGS__));                                               \
  } while (0)

// `v` in [lo, hi]; hi is stretched by RLOCK_TEST_TIME_SCALE, lo never.
#define CHECK_BETWEEN(v, lo, hi)                                               \
  do {                                                                         \
    const long long v_ = static_cast<long long>(v);                            \
    const long long hi_ = static_cast<long long>(rt_scaled_ms(hi));            \
    if (v_ < (lo) || v_ > hi_)                                                 \
      fail_at(__FILE__, __LINE__, #v,                                          \
              str(v_, ", expected between ", (lo), " and ", hi_));             \
  } while (0)

// `expr` throws an exception of type E whose code() is `want`; the
// exception is then available as `e` inside `more` (a block).
#define CHECK_THROWS(E, want, expr, more)                                      \
  do {                                                                         \
    bool thrown_ = false;                                                      \
    try {                                                                      \
      (void)(expr);                                                            \
    } catch (const E &e) {                                                     \
      thrown_ = true;                                                          \
      CHECK(e.code() == (want), #expr " threw ", e.code().value(), " (",       \
            e.what(), ")");                                                    \
      more                                                                     \
    }                                                                          \
    CHECK(thrown_, #expr " did not throw " #E);                                \
  } while (0)

// Run a test body; report its failure through cmocka after unwinding.
template <class F> void run(F &&body) {
  static char report[8192];
  report[0] = '\0';
  try {
    body();
  } catch (const test_failure &f) {
    std::snprintf(report, sizeof report, "%s", f.what());
  } catch (const rlock::error &e) {
    std::snprintf(report, sizeof report, "unexpected rlock::error %d: %s",
                  e.code().value(), e.what());
  } catch (const std::exception &e) {
    std::snprintf(report, sizeof report, "unexpected exception: %s", e.what());
  }
  if (report[0] != '\0')
    fail_msg("%s", report);
}

// Failures of worker threads, checked by the test after joining them.
class failures {
public:
  void add(const std::string &why) {
    std::lock_guard<std::mutex> g(m_);
    list_.push_back(why);
  }
  void check() {
    std::lock_guard<std::mutex> g(m_);
    if (!list_.empty())
      throw test_failure(
          str(list_.size(), " worker failure(s), first: ", list_.front()));
  }

private:
  std::mutex m_;
  std::vector<std::string> list_;
};

// A thread joined when it goes out of scope (also while a failure unwinds);
// its body's exceptions become failures.
class worker {
public:
  template <class F>
  worker(failures &f, F body)
      : t_([&f, body = std::move(body)]() mutable {
          try {
            body();
          } catch (const std::exception &e) {
            f.add(e.what());
          }
        }) {}
  worker(worker &&) = default;
  ~worker() {
    if (t_.joinable())
      t_.join();
  }
  void join() { t_.join(); }

private:
  std::thread t_;
};

long long elapsed_since(long long t0) { return rt_now_ms() - t0; }

// Wait for `pred` up to `ms` (scaled), polling every 10 ms.
void wait_for(const std::function<bool()> &pred, long long ms,
              const char *what) {
  const long long deadline = rt_now_ms() + rt_scaled_ms(ms);
  while (!pred()) {
    if (rt_now_ms() > deadline)
      throw test_failure(str(what, ": not after ", rt_scaled_ms(ms), " ms"));
    rt_sleep_ms(10);
  }
}

// ---- Redis, from the harness
// ---------------------------------------------------

long long redis_llen(const char *key) {
  return rt_cmd_int(srv, "LLEN %s", key);
}

void redis_del(const char *key) { freeReplyObject(rt_cmd(srv, "DEL %s", key)); }

// One hiredis connection, for a worker thread (opened by the test thread).
class connection {
public:
  explicit connection(rt_server *s) : c_(rt_server_connect(s)) {}
  ~connection() { redisFree(c_); }
  connection(const connection &) = delete;
  connection &operator=(const connection &) = delete;
  connection(connection &&o) noexcept : c_(std::exchange(o.c_, nullptr)) {}

  // GET key as an integer (0 when absent).
  long long get(const char *key) {
    auto *r = static_cast<redisReply *>(redisCommand(c_, "GET %s", key));
    if (r == nullptr)
      throw test_failure(str("GET ", key, ": ", c_->errstr));
    long long v = r->type == REDIS_REPLY_STRING ? std::atoll(r->str) : 0;
    bool ok = r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL;
    freeReplyObject(r);
    if (!ok)
      throw test_failure(str("GET ", key, ": unexpected reply"));
    return v;
  }
  void set(const char *key, long long v) {
    auto *r =
        static_cast<redisReply *>(redisCommand(c_, "SET %s %lld", key, v));
    if (r == nullptr)
      throw test_failure(str("SET ", key, ": ", c_->errstr));
    bool ok = r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    if (!ok)
      throw test_failure(str("SET ", key, ": unexpected reply"));
  }
  long long subscribers(const std::string &channel) {
    auto *r = static_cast<redisReply *>(
        redisCommand(c_, "PUBSUB NUMSUB %s", channel.c_str()));
    if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 2)
      throw test_failure("PUBSUB NUMSUB: unexpected reply");
    long long n = r->element[1]->integer;
    freeReplyObject(r);
    return n;
  }

private:
  redisContext *c_;
};

// ---- clients
// ---------------------------------------------------------------------

rlock::config base_config(rt_server *s) {
  rlock::config cfg;
  cfg.url(rt_server_url(s)).connect_timeout(1s).command_timeout(2s);
  return cfg;
}

rlock::client make_client(rt_server *s = srv) {
  return rlock::client(base_config(s));
}

// ---- static properties
// -----------------------------------------------------------

template <class T> constexpr bool move_only() {
  return !std::is_copy_constructible_v<T> && !std::is_copy_assignable_v<T> &&
         std::is_nothrow_move_constructible_v<T> &&
         std::is_nothrow_move_assignable_v<T>;
}
static_assert(move_only<rlock::config>());
static_assert(move_only<rlock::client>());
static_assert(move_only<rlock::mutex>());
static_assert(move_only<rlock::multilock>());
static_assert(move_only<rlock::redlock>());
static_assert(move_only<rlock::owner>());
static_assert(move_only<rlock::cancel_token>());
static_assert(move_only<rlock::election>());
static_assert(move_only<rlock::guard<rlock::mutex>>());
static_assert(std::is_nothrow_move_constructible_v<rlock::read_write_lock>);
static_assert(!std::is_copy_constructible_v<rlock::read_write_lock>);
static_assert(noexcept(std::declval<rlock::mutex &>().unlock()));
static_assert(std::is_base_of_v<std::system_error, rlock::error>);
static_assert(std::is_base_of_v<rlock::error, rlock::lost_lock>);
static_assert(std::is_error_code_enum_v<rlock::errc>);

// ---- the tests
// ----------------------------------------------------------------------

// std::scoped_lock over two rlock mutexes from four threads, two taking
// them in one order and two in the other (std::lock's back-off needs a
// try_lock that never waits): every increment of a counter kept in Redis
// (GET, then SET) survives, and no two threads are ever inside together.
// Threads 0 and 1 share one client and its mutex objects; 2 and 3 have
// their own.
void test_scoped_lock_threads(void **) {
  run([] {
    const int threads = 4, rounds = 25;
    redis_del("cpp:counter");
    rlock::client shared = make_client();
    rlock::mutex sa(shared, "cpp:a"), sb(shared, "cpp:b");
    std::atomic<int> inside{0}, overlaps{0};
    failures fails;
    std::vector<connection> conns;
    for (int i = 0; i < threads; i++)
      conns.emplace_back(srv);
    std::vector<worker> ws;
    for (int i = 0; i < threads; i++) {
      ws.emplace_back(fails, [&, i] {
        rlock::client own;
        rlock::mutex oa, ob;
        if (i >= 2) {
          own = make_client();
          oa = rlock::mutex(own, "cpp:a");
          ob = rlock::mutex(own, "cpp:b");
        }
        rlock::mutex &a = i >= 2 ? oa : sa, &b = i >= 2 ? ob : sb;
        for (int r = 0; r < rounds; r++) {
          auto body = [&] {
            if (inside.fetch_add(1) != 0)
              overlaps++;
            conns[i].set("cpp:counter", conns[i].get("cpp:counter") + 1);
            inside.fetch_sub(1);
          };
          if (i % 2 == 0) {
            std::scoped_lock g(a, b);
            body();
          } else {
            std::scoped_lock g(b, a);
            body();
          }
        }
      });
    }
    for (auto &w : ws)
      w.join();
    fails.check();
    CHECK(overlaps.load() == 0, overlaps.load(), " times two threads inside");
    long long n = conns[0].get("cpp:counter");
    CHECK(n == threads * rounds, "counter ", n, ", wanted ", threads * rounds);
    CHECK(!sa.is_locked() && !sb.is_locked(), "a lock left held");
  });
}

// std::unique_lock's timed forms against a lock another owner holds: each
// gives up after its wait, not before, and not much after; try_lock is
// one attempt; a release from another thread ends a long wait at once.
void test_timed_waits(void **) {
  run([] {
    rlock::config cfg = base_config(srv);
    cfg.subscription_linger(0ms, 0); // so a waiter's subscription shows it
    rlock::client c(cfg);
    rlock::mutex m(c, "cpp:timed");
    rlock::owner other;
    m.for_owner(other).lock();

    long long t0 = rt_now_ms();
    std::unique_lock<rlock::mutex> ul(m, 300ms);
    CHECK(!ul.owns_lock(), "acquired a lock another owner holds");
    CHECK_BETWEEN(elapsed_since(t0), 300, 3000);

    t0 = rt_now_ms();
    CHECK(!ul.try_lock_until(std::chrono::steady_clock::now() + 300ms));
    CHECK_BETWEEN(elapsed_since(t0), 300, 3000);
    t0 = rt_now_ms();
    CHECK(!ul.try_lock_until(std::chrono::system_clock::now() + 300ms));
    CHECK_BETWEEN(elapsed_since(t0), 300, 3000);
    t0 = rt_now_ms();
    CHECK(!ul.try_lock_until(std::chrono::steady_clock::now() - 1s));
    CHECK_BETWEEN(elapsed_since(t0), 0, 500);

    // try_lock: a single attempt, no wait.
    t0 = rt_now_ms();
    CHECK(!ul.try_lock());
    CHECK_BETWEEN(elapsed_since(t0), 0, 500);
    t0 = rt_now_ms();
    CHECK(!m.try_lock_for(0ms) && !m.try_lock_for(-5s));
    CHECK_BETWEEN(elapsed_since(t0), 0, 500);

    // A long wait ended by a release on another thread (the owner's hold,
    // released where it was not taken), once the waiter listens.
    failures fails;
    connection conn(srv);
    worker releaser(fails, [&] {
      wait_for(
          [&] {
            return conn.subscribers("redisson_lock__channel:{cpp:timed}") == 1;
          },
          5000, "the waiter's subscription");
      m.release(other);
    });
    t0 = rt_now_ms();
    CHECK(ul.try_lock_for(20s), "not acquired after the release");
    CHECK_BETWEEN(elapsed_since(t0), 0, 5000);
    releaser.join();
    fails.check();
    CHECK(m.is_held() && m.hold_count() == 1);
    ul.unlock();
    CHECK(!m.is_locked());
  });
}

// Moves: the moved-to object works, the moved-from one is empty, refuses
// operations with errc::invalid and is destructible; assignment frees
// what the target held.
void test_moves(void **) {
  run([] {
    rlock::config cfg = base_config(srv);
    rlock::config cfg2(std::move(cfg));
    CHECK(!cfg && cfg2 && cfg.native_handle() == nullptr);
    CHECK_THROWS(rlock::error, rlock::errc::invalid, cfg.pool_size(4), );
    cfg = std::move(cfg2); // back, into the emptied one
    CHECK(cfg && !cfg2);

    rlock::client c1(cfg);
    rlock::client c2(std::move(c1));
    CHECK(!c1 && c2);
    CHECK_THROWS(rlock::error, rlock::errc::invalid, c1.id(), );
    rlock::client c3 = make_client();
    c3 = std::move(c2); // frees c3's own client
    CHECK(!c2 && c3 && c3.id().size() == 36);

    rlock::mutex m1(c3, "cpp:move");
    rlock::mutex m2(std::move(m1));
    CHECK(!m1 && m2 && m2.name() == "cpp:move" && m1.name().empty());
    CHECK_THROWS(rlock::error, rlock::errc::invalid, m1.lock(), );
    CHECK_THROWS(rlock::error, rlock::errc::invalid, m1.try_lock(), );
    m1.unlock(); // throws nothing, does nothing
    {
      std::lock_guard<rlock::mutex> g(m2);
      CHECK(m2.is_held());
    }
    rlock::mutex m3 = rlock::mutex::fair(c3, "cpp:move:fair");
    m3 = std::move(m2);
    CHECK(m3.kind() == rlock::kind::reentrant && m3.name() == "cpp:move");
    CHECK(!m3.is_locked());

    rlock::mutex x(c3, "cpp:move:x"), y(c3, "cpp:move:y");
    rlock::multilock ml1(x, y);
    rlock::multilock ml2(std::move(ml1));
    CHECK(!ml1 && ml2);
    CHECK_THROWS(rlock::error, rlock::errc::invalid, ml1.lock(), );
    ml2.lock();
    ml2.unlock();

    rlock::owner o1;
    const std::uint64_t id = o1.id();
    rlock::owner o2(std::move(o1));
    CHECK(!o1 && o2.id() == id && o1.id() == 0);
    CHECK_THROWS(rlock::error, rlock::errc::invalid, x.for_owner(o1), );
    CHECK_THROWS(rlock::error, rlock::errc::invalid,
                 rlock::acquire_options().owner(o1), );

    rlock::guard<rlock::mutex> g1(x);
    rlock::guard<rlock::mutex> g2(std::move(g1));
    CHECK(!g1.owns_lock() && g2.owns_lock() && x.hold_count() == 1);
    g1 = std::move(g2);
    CHECK(g1.owns_lock() && !g2 && x.hold_count() == 1);
    g1 = rlock::guard<rlock::mutex>(y); // releases x, holds y
    CHECK(!x.is_locked() && y.is_held());
    g1.unlock();
    CHECK(!y.is_locked());

    rlock::cancel_token t1;
    rlock::cancel_token t2(std::move(t1));
    CHECK(!t1 && t2 && !t2.fired() && !t1.fired());
    t1.fire(); // empty: nothing happens

    rlock::read_write_lock rw1(c3, "cpp:move:rw");
    rlock::read_write_lock rw2(std::move(rw1));
    CHECK(!rw1 && rw2);
    std::shared_lock<rlock::read_write_lock> s(rw2);
    CHECK(rw2.read_lock().is_held());
  });
}

// Bad arguments: rlock::error with errc::invalid, the category "rlock",
// the portable condition, and the library's own message in what().
void test_errors_arguments(void **) {
  run([] {
    rlock::client c = make_client();
    rlock_lock *raw = nullptr;
    CHECK(rlock_lock_new(&raw, c.native_handle(), "") == RLOCK_EINVAL);
    const std::string c_message = rlock_error_last()->message;
    CHECK_THROWS(rlock::error, rlock::errc::invalid, rlock::mutex(c, ""), {
      CHECK(e.message() == c_message, "'", e.message(), "' vs '", c_message,
            "'");
      CHECK(e.status() == rlock::errc::invalid);
      CHECK(std::string(e.what()).find(c_message) != std::string::npos,
            e.what());
      CHECK(std::string(e.what()).find(rlock_strerror(RLOCK_EINVAL)) !=
                std::string::npos,
            e.what());
      CHECK(&e.code().category() == &rlock::category());
      CHECK(std::string(e.code().category().name()) == "rlock");
      CHECK(e.code() == std::errc::invalid_argument);
      CHECK(e.code().value() == RLOCK_EINVAL);
    });
    // Caught as the standard type too.
    bool caught = false;
    try {
      rlock::mutex m(c, std::string("a\0b", 3));
    } catch (const std::system_error &e) {
      caught = e.code() == rlock::errc::invalid;
    }
    CHECK(caught, "a NUL in a name was not refused");

    rlock::config cfg;
    CHECK_THROWS(rlock::error, rlock::errc::invalid, cfg.pool_size(0), {
      CHECK(e.message().find("pool") != std::string::npos, e.message());
    });
    CHECK_THROWS(rlock::error, rlock::errc::invalid, cfg.url("nope://x"), );
    CHECK_THROWS(rlock::error, rlock::errc::invalid,
                 cfg.watchdog_timeout(1ms), );
    CHECK_THROWS(rlock::error, rlock::errc::invalid,
                 rlock::client("nope://x"), );
    CHECK_THROWS(rlock::error, rlock::errc::invalid, rlock::owner(0), );
    rlock::mutex m(c, "cpp:args");
    CHECK_THROWS(rlock::error, rlock::errc::invalid, m.lock(-1ms), );
    CHECK_THROWS(rlock::error, rlock::errc::invalid, m.lock(400 * 24h), );
    std::int64_t tok = 0;
    CHECK_THROWS(rlock::error, rlock::errc::invalid,
                 m.acquire(rlock::acquire_options().token(tok)), );
    CHECK(!m.is_locked());

    // Conversions of durations to the C API's milliseconds.
    auto wait = [](auto d) {
      return rlock::acquire_options().wait(d).native().wait_ms;
    };
    CHECK(wait(1ns) == 1 && wait(1500us) == 2 && wait(2s) == 2000);
    CHECK(wait(0s) == 0 && wait(-3s) == 0);
    CHECK(wait(std::chrono::hours::max()) == RLOCK_WAIT_FOREVER);
    CHECK(wait(std::chrono::duration<double>(0.0015)) == 2);
    CHECK(rlock::acquire_options().native().wait_ms == RLOCK_WAIT_FOREVER);
    CHECK(rlock::acquire_options().native().lease_ms == RLOCK_LEASE_WATCHDOG);
  });
}

// The statuses of lock operations: not held, lost (release, check,
// guard), wrong type, deadlock, unreachable server, canceled; and a lock
// held elsewhere is `false`, never an exception.
void test_errors_locks(void **) {
  run([] {
    rlock::client c = make_client();
    rlock::mutex m(c, "cpp:err");

    CHECK_THROWS(rlock::error, rlock::errc::not_held, m.release(), {
      CHECK(e.code() == std::errc::operation_not_permitted);
      CHECK(e.message().find("cpp:err") != std::string::npos, e.message());
    });
    std::error_code ec;
    m.release(ec);
    CHECK(ec == rlock::errc::not_held, ec.message());
    m.unlock(); // noexcept: nothing to report, nothing thrown
    CHECK_THROWS(rlock::error, rlock::errc::not_held, m.check(), );

    // Lost: deleted while held, found by the release.
    m.lock();
    redis_del("cpp:err");
    CHECK_THROWS(rlock::lost_lock, rlock::errc::lost, m.release(), {
      CHECK(e.message().find("lost") != std::string::npos, e.message());
    });
    // ... by check() once a fixed lease ran out (the passage of time is
    // the behaviour here: polled, not slept).
    m.lock(150ms);
    wait_for(
        [&] {
          try {
            m.check();
            return false;
          } catch (const rlock::lost_lock &) {
            return true;
          }
        },
        5000, "check() to see the lease run out");
    // check() errs early (its clock starts when the acquisition was sent):
    // the release finds the loss once the server has let the key go.
    wait_for([] { return rt_cmd_int(srv, "EXISTS %s", "cpp:err") == 0; }, 5000,
             "the server to expire cpp:err");
    CHECK_THROWS(rlock::lost_lock, rlock::errc::lost, m.release(), );
    // ... and by a guard's checked unlock; its destructor reports nothing.
    {
      rlock::guard g(m);
      redis_del("cpp:err");
      CHECK_THROWS(rlock::lost_lock, rlock::errc::lost, g.unlock(), );
      CHECK(!g.owns_lock());
      CHECK_THROWS(rlock::error, rlock::errc::not_held, g.unlock(), );
    }
    {
      rlock::guard g(m);
      redis_del("cpp:err"); // lost again: ~guard says nothing
    }
    CHECK(!m.is_locked());

    // extend(): a fresh fixed lease; refused for nobody's hold, and lost
    // once the hold is gone.
    CHECK_THROWS(rlock::error, rlock::errc::not_held, m.extend(10s), );
    m.lock(300ms);
    m.extend(20s);
    CHECK(m.ttl().value_or(0ms) > 15000ms, "extended TTL");
    redis_del("cpp:err");
    CHECK_THROWS(rlock::lost_lock, rlock::errc::lost, m.extend(20s), );
    m.unlock();

    // A non-reentrant lock asked again by its holder: refused at once.
    {
      rlock::mutex nr = rlock::mutex::nonreentrant(c, "cpp:nr");
      nr.lock();
      CHECK_THROWS(rlock::error, rlock::errc::held, nr.lock(), {
        CHECK(e.code() == std::errc::resource_deadlock_would_occur);
      });
      CHECK_THROWS(rlock::error, rlock::errc::held, nr.try_lock(), );
      nr.unlock();
      CHECK(!nr.is_locked());
    }

    // A key that is not a lock.
    rt_cmd_ok(srv, "SET cpp:str x");
    rlock::mutex s(c, "cpp:str");
    CHECK_THROWS(rlock::wrong_type, rlock::errc::wrong_type, s.lock(), );
    CHECK_THROWS(rlock::wrong_type, rlock::errc::wrong_type, s.try_lock(), );
    CHECK_THROWS(rlock::wrong_type, rlock::errc::wrong_type, s.is_locked(), );
    redis_del("cpp:str");

    // The refused upgrade of a read-write lock.
    rlock::read_write_lock rw(c, "cpp:err:rw");
    std::shared_lock<rlock::read_write_lock> reader(rw);
    CHECK_THROWS(rlock::deadlock_error, rlock::errc::deadlock,
                 rw.write_lock().try_lock(), {
                   CHECK(e.code() == std::errc::resource_deadlock_would_occur);
                 });
    reader.unlock();

    // Held elsewhere: false, not an exception; canceled: an exception.
    rlock::owner other;
    m.for_owner(other).lock();
    CHECK(!m.try_lock());
    CHECK(!m.acquire(rlock::acquire_options().wait(50ms)));
    rlock::cancel_token cancel;
    cancel.fire();
    CHECK_THROWS(rlock::canceled, rlock::errc::canceled,
                 m.acquire(rlock::acquire_options().cancel(cancel)), );
    m.release(other);

    // A server nobody listens on: a wait would try it again for as long as
    // it lasts (unbounded here), so bound that to no retry at all.
    rlock::config cfg;
    cfg.url(str("redis://127.0.0.1:", rt_free_port()))
        .connect_timeout(500ms)
        .unreachable_retry(0ms);
    rlock::client down(cfg);
    rlock::mutex d(down, "cpp:down");
    CHECK_THROWS(rlock::connection_error, rlock::errc::io, d.lock(),
                 { CHECK(e.code() == std::errc::io_error); });
    CHECK_THROWS(rlock::connection_error, rlock::errc::io, down.ping(), );
  });
}

// Every kind through the wrapper: reentrant, fair, fenced (tokens), spin,
// both halves of a read-write lock, a multilock, owners, guards, queries.
void test_kinds(void **) {
  run([] {
    rlock::client c = make_client();
    const rlock::kind kinds[] = {rlock::kind::reentrant, rlock::kind::fair,
                                 rlock::kind::fenced, rlock::kind::spin};
    for (rlock::kind k : kinds) {
      const std::string name = str("cpp:kind:", static_cast<int>(k));
      rlock::mutex m(c, name, k);
      CHECK(m.kind() == k && m.name() == name);
      m.lock();
      m.lock(); // reentrant, every kind
      CHECK(m.is_held() && m.is_locked() && m.hold_count() == 2, name);
      rlock::lock_info info = m.inspect();
      CHECK(info.locked && info.holders.size() == 1, name);
      CHECK(info.holders[0].owner == c.owner_field(), info.holders[0].owner);
      CHECK(info.holders[0].holds == 2 && info.ttl && *info.ttl > 0ms, name);
      CHECK(!info.node.empty() && info.mode.empty(), name);
      m.check();
      m.unlock();
      m.release();
      CHECK(!m.is_locked() && !m.ttl(), name);
      // Held by another owner: refused without waiting, then free again.
      rlock::owner o;
      auto as_o = m.for_owner(o);
      CHECK(as_o.try_lock_for(1s), name);
      CHECK(!m.try_lock() && m.is_held(o) && m.hold_count(o) == 1, name);
      as_o.unlock();
      CHECK(m.try_lock_for(1s, 10s), name); // a fixed 10 s lease
      auto ttl = m.ttl();
      CHECK(ttl && *ttl <= 10s && *ttl > 5s, name);
      m.release();
    }

    // Fenced: each acquisition gets a larger token; token() is the holder's.
    rlock::mutex f = rlock::mutex::fenced(c, "cpp:fenced");
    std::int64_t t1 = 0, t2 = 0;
    CHECK(f.acquire(rlock::acquire_options().token(t1)));
    CHECK(t1 > 0 && f.token() == t1, t1);
    f.release();
    {
      std::unique_lock<rlock::mutex> g(f);
      t2 = f.token();
    }
    CHECK(t2 > t1, t2, " after ", t1);

    // Fair: a try never queues.
    rlock::mutex fair = rlock::mutex::fair(c, "cpp:fair");
    rlock::owner o;
    fair.for_owner(o).lock();
    CHECK(!fair.try_lock());
    CHECK(redis_llen("redisson_lock_queue:{cpp:fair}") == 0);
    fair.release(o);

    // Read-write: readers share, a writer is alone.
    rlock::read_write_lock rw(c, "cpp:rw");
    rlock::owner r2;
    {
      std::shared_lock<rlock::read_write_lock> r(rw);
      CHECK(rw.read_lock().for_owner(r2).try_lock(), "a second reader");
      CHECK(rw.read_lock().inspect().mode == "read");
      rlock::owner w3;
      CHECK(!rw.write_lock().for_owner(w3).try_lock(), "write beside readers");
      rw.read_lock().release(r2);
    }
    {
      std::unique_lock<rlock::read_write_lock> w(rw, std::try_to_lock);
      CHECK(w.owns_lock() && rw.write_lock().is_held());
      CHECK(rw.write_lock().inspect().mode == "write");
      CHECK(!rw.read_lock().for_owner(r2).try_lock(), "read beside a writer");
    }
    CHECK(!rw.write_lock().is_locked());

    // A multilock over three kinds: all or none.
    rlock::mutex a(c, "cpp:ml:a"), b = rlock::mutex::fair(c, "cpp:ml:b"),
                                   w = rlock::mutex::write(c, "cpp:ml:w");
    rlock::multilock ml{a, b, w};
    {
      std::unique_lock<rlock::multilock> g(ml);
      CHECK(ml.is_held() && a.is_held() && b.is_held() && w.is_held());
    }
    CHECK(!a.is_locked() && !b.is_locked() && !w.is_locked());
    b.for_owner(o).lock();
    CHECK(!ml.try_lock_for(100ms));
    CHECK(!a.is_locked() && !w.is_locked(), "a partial hold was left");
    b.release(o);
    std::vector<std::reference_wrapper<rlock::mutex>> members{w, a};
    rlock::multilock ml2(members.begin(), members.end());
    CHECK(ml2.try_lock());
    ml2.release();

    // An owner's hold, taken here and given back on another thread.
    rlock::owner task;
    auto view = a.for_owner(task);
    std::unique_lock<rlock::owned<rlock::mutex>> held(view);
    CHECK(a.is_held(task) && !a.is_held());
    failures fails;
    {
      worker other(fails, [&] {
        std::unique_lock<rlock::owned<rlock::mutex>> there(std::move(held));
        there.unlock();
      });
    }
    fails.check();
    CHECK(!a.is_locked());

    // Guards: a lease, a try, adoption.
    {
      rlock::guard g(a, 5s);
      auto ttl = a.ttl();
      CHECK(g.owns_lock() && ttl && *ttl <= 5s);
      rlock::guard<rlock::mutex> t(
          a, rlock::acquire_options().owner(task).try_once());
      CHECK(!t.owns_lock(), "a second owner got it");
    }
    CHECK(!a.is_locked());
    a.lock();
    { rlock::guard g(a, std::adopt_lock); }
    CHECK(!a.is_locked());
    CHECK(a.force_release() == false);
  });
}

// A RedLock over three servers: all taken when free; the quorum still
// reached with one member held elsewhere, whose refusal the result shows.
void test_redlock(void **) {
  run([] {
    auto stop = [](rt_server *s) { rt_server_free(s); };
    std::unique_ptr<rt_server, decltype(stop)> s2(rt_server_start(nullptr),
                                                  stop),
        s3(rt_server_start(nullptr), stop);
    rlock::client c1 = make_client(srv), c2 = make_client(s2.get()),
                  c3 = make_client(s3.get());
    rlock::mutex m1(c1, "cpp:red"), m2(c2, "cpp:red"), m3(c3, "cpp:red");
    rlock::redlock r(m1, m2, m3);
    rlock::redlock_result res;
    CHECK(r.acquire(rlock::acquire_options().wait(2s).lease(10s), res));
    CHECK(res.members.size() == 3 && res.validity > 0ms);
    for (const auto &mem : res.members)
      CHECK(!mem.status, mem.message);
    CHECK(m1.is_held() && m2.is_held() && m3.is_held());
    r.release();
    CHECK(!m1.is_locked() && !m2.is_locked() && !m3.is_locked());

    rlock::owner o;
    m3.for_owner(o).lock();
    CHECK(r.acquire(rlock::acquire_options().try_once(), res));
    CHECK(!res.members[0].status && !res.members[1].status);
    CHECK(res.members[2].status == rlock::errc::locked,
          res.members[2].status.value());
    r.unlock();
    m3.release(o);
    {
      std::scoped_lock g(r);
      CHECK(m1.is_held() && m2.is_held() && m3.is_held());
    }
    CHECK(!m1.is_locked());
  });
}

// The client: identity, queries, listing, and C++ callbacks that outlive
// the config they were set on (the lost lock's and the log's).
void test_client(void **) {
  run([] {
    std::atomic<int> lost{0}, logged{0};
    std::string lost_name;
    std::mutex mu;
    rlock::client c;
    {
      rlock::config cfg = base_config(srv);
      cfg.watchdog_timeout(300ms)
          .lost_callback([&](std::string_view name, std::string_view owner) {
            std::lock_guard<std::mutex> g(mu);
            lost_name = std::string(name) + " " + std::string(owner);
            lost++;
          })
          .log([&](rlock::log_level, std::string_view) { logged++; },
               rlock::log_level::debug);
      c = rlock::client(cfg);
    } // the config is gone; the client keeps its callables
    CHECK(c.id().size() == 36 && c.topology() == "single");
    CHECK(c.ping() >= 0us);
    CHECK(logged.load() > 0, "no log message for the connection opened");

    rlock::mutex m(c, "cpp:lost");
    m.lock();
    CHECK(c.stats().acquisitions >= 1);
    std::vector<rlock::listed_lock> found = c.list_locks("cpp:lost*");
    CHECK(found.size() == 1 && found[0].name == "cpp:lost" &&
              found[0].kind == "reentrant" && found[0].info.holders.size() == 1,
          found.size());
    const std::string owner = c.owner_field();
    std::optional<rlock_client_record> rec;
    wait_for([&] { return (rec = c.whois(owner)).has_value(); }, 5000,
             "the client's registry record");
    CHECK(rec->client_id == c.id() && rec->pid == getpid(), rec->pid);
    CHECK(!c.whois("00000000-0000-0000-0000-000000000000").has_value());
    CHECK_THROWS(rlock::error, rlock::errc::invalid, c.whois("not an id"), );
    const std::string metrics = c.metrics_text();
    CHECK(metrics.find("rlock_acquisitions_total") != std::string::npos,
          metrics.size());
    CHECK(c.metrics_text(true).find("# EOF") != std::string::npos);
    redis_del("cpp:lost");
    wait_for([&] { return lost.load() == 1; }, 5000, "the lost callback");
    {
      std::lock_guard<std::mutex> g(mu);
      CHECK(lost_name == "cpp:lost " + owner, lost_name);
    }
    CHECK_THROWS(rlock::lost_lock, rlock::errc::lost, m.check(), );
    CHECK_THROWS(rlock::lost_lock, rlock::errc::lost, m.release(), );

    rlock::owner o;
    CHECK(c.owner_field(o) ==
          std::string(c.id()) + ":" + std::to_string(o.id()));
    std::vector<std::string> names{"b", "c", "a"};
    rlock::sort_names(names);
    CHECK(names == std::vector<std::string>({"a", "b", "c"}));
  });
}

// counting_semaphore, permit_semaphore and latch: the standard shapes,
// leases and the watchdog, a waiter woken by another thread, the RAII
// permit, and bad input refused with nothing written.
void test_semaphores_and_latch(void **) {
  run([] {
    rlock::client c = make_client();
    connection redis(srv);
    rlock::counting_semaphore sem(c, "cpp:sem");
    CHECK(sem.name() == "cpp:sem" && sem.available() == 0);
    CHECK(sem.try_set_permits(2) && !sem.try_set_permits(9));
    sem.acquire();
    CHECK(sem.try_acquire() && !sem.try_acquire());
    CHECK(!sem.try_acquire_for(50ms));
    CHECK(!sem.try_acquire_until(std::chrono::steady_clock::now() + 20ms));
    failures f;
    {
      worker w(f, [&] { CHECK(sem.try_acquire_for(20s, 2)); });
      wait_for([&] { return redis.subscribers("redisson_sc:{cpp:sem}") >= 1; },
               5000, "the semaphore waiter");
      std::vector<rlock::listed_sync> found = c.list_syncs("cpp:se?");
      CHECK(found.size() == 1 && found[0].name == "cpp:sem" &&
                found[0].kind == "semaphore" && found[0].value == 0 &&
                found[0].subscribers >= 1 && !found[0].node.empty(),
            found.size());
      found = c.list_counts("cpp:se?");
      CHECK(found.size() == 1 && found[0].kind == "count" &&
                found[0].value == 0 && found[0].subscribers == -1,
            found.size());
      CHECK(c.list_syncs("cpp:nothing*").empty());
      CHECK_THROWS(rlock::error, rlock::errc::invalid, c.list_syncs(""), );
      sem.release(2);
    }
    f.check();
    CHECK(sem.available() == 0);
    sem.add_permits(3);
    CHECK(sem.drain() == 3);
    rlock::cancel_token tok; // a wait another thread ends
    {
      const auto waits = c.stats().waits;
      worker w(f, [&] {
        CHECK_THROWS(rlock::canceled, rlock::errc::canceled,
                     sem.acquire(rlock::acquire_options().cancel(tok)), );
      });
      wait_for([&] { return c.stats().waits > waits; }, 5000,
               "the semaphore waiter");
      tok.fire();
    }
    f.check();
    CHECK(sem.available() == 0);
    CHECK_THROWS(rlock::error, rlock::errc::invalid, sem.acquire(0), );
    CHECK_THROWS(rlock::error, rlock::errc::invalid, sem.release(-1), );
    rlock::owner o;
    CHECK_THROWS(rlock::error, rlock::errc::invalid,
                 sem.acquire(rlock::acquire_options().owner(o)), );

    rlock::permit_semaphore ps(c, "cpp:psem");
    CHECK(ps.try_set_permits(2));
    {
      rlock::permit a = ps.acquire();
      CHECK(a && a.id().size() == RLOCK_PERMIT_ID_LEN);
      a.check();
      std::optional<rlock::permit> b = ps.try_acquire_for(1s, 200ms);
      CHECK(b && b->id() != a.id());
      CHECK(ps.available() == 0 && ps.permits() == 2 && !ps.try_acquire());
      CHECK_BETWEEN(a.lease_left()->count(), 20000, 30000);
      wait_for([&] { return ps.available() == 1; }, 5000, "b's lease to end");
      CHECK_THROWS(rlock::lost_lock, rlock::errc::lost, b->check(), );
      CHECK_THROWS(rlock::lost_lock, rlock::errc::lost, b->release(), );
      a.update_lease(60s);
      CHECK_BETWEEN(a.lease_left()->count(), 55000, 60000);
      rlock::permit moved = std::move(a);
      CHECK(!a && moved);
    } // moved's destructor released it
    CHECK(ps.available() == 2);
    CHECK_THROWS(rlock::error, rlock::errc::not_held,
                 ps.release(std::string(32, '0')), );
    CHECK_THROWS(rlock::error, rlock::errc::invalid, ps.release("x"), );
    CHECK_THROWS(rlock::error, rlock::errc::invalid, ps.acquire(0ms), );
    rlock::permit kept = ps.acquire(30s);
    const std::string id = kept.dismiss();
    CHECK(!kept && ps.available() == 1);
    ps.release(id);
    CHECK(ps.available() == 2);

    rlock::latch l(c, "cpp:latch");
    CHECK(l.try_wait() && l.count() == 0);
    CHECK(l.try_set_count(2) && !l.try_set_count(5));
    CHECK(!l.try_wait() && !l.wait_for(30ms));
    {
      worker w(f, [&] { l.wait(); });
      wait_for(
          [&] {
            return redis.subscribers(
                       "redisson_countdownlatch__channel__{cpp:latch}") >= 1;
          },
          5000, "the latch waiter");
      l.count_down();
      CHECK(l.count() == 1);
      l.arrive_and_wait();
    }
    f.check();
    CHECK(l.count() == 0 && l.wait_until(std::chrono::system_clock::now()));
    CHECK_THROWS(rlock::error, rlock::errc::invalid, l.try_set_count(0), );
    CHECK(l.try_set_count(1) && l.remove() && !l.remove());
    redis.set("cpp:notsem", 1);
    rlock::mutex m(c, "cpp:notsem");
    CHECK_THROWS(rlock::wrong_type, rlock::errc::wrong_type, m.try_lock(), );
    rlock::counting_semaphore empty;
    CHECK(!empty && empty.name().empty());
    static_assert(move_only<rlock::counting_semaphore>());
    static_assert(move_only<rlock::permit_semaphore>());
    static_assert(move_only<rlock::permit>());
    static_assert(move_only<rlock::latch>());
  });
}

int setup(void **) {
  srv = rt_server_start(nullptr);
  return 0;
}

// An election: campaign (the term), observe from another client, a second
// campaign refused (errc::held), resign of a non-leader (errc::not_held), a
// standby taking over once a fixed lease runs out, the stale leader told.
void test_election(void **) {
  run([] {
    redis_del("cpp:elect");
    rlock::client a = make_client(), b = make_client();
    rlock::election ea(a, "cpp:elect"), eb(b, "cpp:elect");
    CHECK(ea.name() == "cpp:elect" && !ea.observe());
    auto t1 = ea.campaign("A", rlock::acquire_options().lease(800ms));
    CHECK(t1 && *t1 > 0);
    auto seen = eb.observe();
    CHECK(seen && seen->value == std::optional<std::string>("A"));
    CHECK(seen->term == *t1 && seen->owner == a.owner_field(), seen->owner);
    CHECK(seen->ttl > 0ms && seen->ttl <= 800ms, seen->ttl.count());
    ea.check();
    CHECK_THROWS(rlock::error, rlock::errc::held, ea.campaign("again"), );
    CHECK_THROWS(rlock::error, rlock::errc::invalid, ea.campaign(""), );
    CHECK_THROWS(rlock::error, rlock::errc::not_held, eb.resign(), );
    CHECK(!eb.campaign("B", rlock::acquire_options().try_once()));
    auto t0 = std::chrono::steady_clock::now();
    auto t2 = eb.campaign("B", rlock::acquire_options().wait(5s));
    auto took = std::chrono::steady_clock::now() - t0;
    CHECK(t2 && *t2 > *t1 && took < 1800ms, *t2);
    CHECK_THROWS(rlock::lost_lock, rlock::errc::lost, ea.check(), );
    CHECK(eb.observe()->value == std::optional<std::string>("B"));
    eb.resign();
    CHECK(!ea.observe());
  });
}

// election::watch: the leader now, then each change (the wrapper's
// plumbing; the C tests follow the messages), stopped by its RAII object.
void test_election_watch(void **) {
  run([] {
    redis_del("cpp:elect:watch");
    rlock::client a = make_client(), b = make_client();
    rlock::election ea(a, "cpp:elect:watch"), eb(b, "cpp:elect:watch");
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> seen; // "-": nobody
    auto told = [&](const std::optional<rlock::leader> &l) {
      std::lock_guard<std::mutex> g(mu);
      seen.push_back(l ? l->value.value_or("?") : "-");
      cv.notify_all();
    };
    auto wait_for = [&](std::size_t n) {
      std::unique_lock<std::mutex> g(mu);
      CHECK(cv.wait_for(g, 10s, [&] { return seen.size() >= n; }), seen.size());
    };
    CHECK_THROWS(rlock::error, rlock::errc::invalid, ea.watch(told, 1ms), );
    rlock::leader_watch w = ea.watch(told, 20ms);
    CHECK(static_cast<bool>(w));
    wait_for(1);
    auto term = eb.campaign("B");
    CHECK(term.has_value());
    wait_for(2);
    eb.resign();
    wait_for(3);
    w.stop();
    CHECK(!w);
    std::lock_guard<std::mutex> g(mu);
    CHECK(seen.size() == 3 && seen[0] == "-" && seen[1] == "B" &&
              seen[2] == "-",
          seen.size());
  });
}

int teardown(void **) {
  rt_server_free(srv);
  return 0;
}

} // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scoped_lock_threads),
      cmocka_unit_test(test_timed_waits),
      cmocka_unit_test(test_moves),
      cmocka_unit_test(test_errors_arguments),
      cmocka_unit_test(test_errors_locks),
      cmocka_unit_test(test_kinds),
      cmocka_unit_test(test_redlock),
      cmocka_unit_test(test_client),
      cmocka_unit_test(test_semaphores_and_latch),
      cmocka_unit_test(test_election),
      cmocka_unit_test(test_election_watch),
  };
  if (std::getenv("RLOCK_TEST_FILTER") != nullptr)
    cmocka_set_test_filter(std::getenv("RLOCK_TEST_FILTER"));
  return cmocka_run_group_tests(tests, setup, teardown);
}
