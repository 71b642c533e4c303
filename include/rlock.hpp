// SPDX-License-Identifier: BSD-3-Clause
//
// rlock.hpp - header-only C++17 wrappers over rlock's C API (rlock.h).
//
// Nothing here is compiled into librlock: include this header and link
// librlock as a C program does (pkg-config rlock, or rlock::rlock in CMake).
// Needs C++17; also compiles as C++20. Everything lives in namespace rlock.
//
//   rlock::client c("redis://127.0.0.1:6379");
//   rlock::mutex orders(c, "orders"), payments(c, "payments");
//   {
//     std::scoped_lock both(orders, payments); // deadlock-free, as std::lock
//     ...                                      // both held
//   }
//
// Types. Each owns one C object, moves and does not copy; a moved-from (or
// default-constructed) object is empty (explicit operator bool is false),
// may be assigned to and destroyed, and its operations that reach the
// library throw rlock::error with errc::invalid (the noexcept ones, such
// as unlock(), do nothing).
//  - config:     rlock_config, typed chainable setters (c.url(...).x(...)).
//  - client:     rlock_client, from a URL or a config.
//  - mutex:      rlock_lock, one lock object of any kind (kind::reentrant,
//                fair, read, write, fenced, spin). It meets the standard's
//                Lockable and TimedLockable requirements, so std::unique_lock,
//                std::scoped_lock and std::lock work with it. (It cannot be
//                called rlock::lock: a class may not have a member function
//                named after itself, and Lockable needs lock().)
//  - read_write_lock: the two halves of a read-write lock, also usable as a
//                SharedTimedLockable (std::shared_lock takes the read half).
//  - multilock:  rlock_multilock, several mutexes all or none; Lockable.
//  - redlock:    rlock_redlock, a quorum over independent servers; Lockable.
//  - owner:      an explicit owner (rlock_owner_new) whose holds may be
//                taken on one thread and released on another; m.for_owner(o)
//                is a Lockable view that acts for it.
//  - cancel_token: rlock_cancel, ends a wait from any thread.
//  - guard<L>:   holds a Lockable for a scope and can release it checked.
//  - counting_semaphore: rlock_semaphore (Redisson's RSemaphore), shaped
//                like std::counting_semaphore; its permits never expire.
//  - permit_semaphore, permit: rlock_psemaphore (RPermitExpirableSemaphore)
//                and one permit of it, released when the permit object is
//                destroyed (RAII); leases, or the watchdog.
//  - latch:      rlock_latch (RCountDownLatch), shaped like std::latch,
//                with timed waits.
//  - election, leader: rlock_election (leader election on the fenced lock):
//                campaign() returns the term, observe() a leader snapshot.
//
// Lifetimes (the C headers' rules, which the wrappers cannot enforce):
//  - A client must outlive every mutex made from it; mutexes must outlive
//    the multilocks and redlocks over them; a view (for_owner) must not
//    outlive its lock or its owner, nor a guard its lock; a permit_semaphore
//    must outlive its permits, and a client every semaphore, latch and
//    election.
//  - Holds belong to the thread that took them (or to an explicit owner),
//    not to the object: destroying a mutex or a client does not release a
//    lock (it expires after its lease; a watchdog lease within the watchdog
//    timeout). Guards, std::unique_lock and std::scoped_lock release.
//  - A client cannot be destroyed from its own lost-lock callback (the C
//    library refuses: the client would then leak), and no other thread may
//    be inside a call on it while it is destroyed.
//  - A config may be destroyed once the clients are made: they copy it
//    (and share the C++ callbacks set on it).
//
// Threading: a client, a mutex, a multilock and a redlock may be used by
// any number of threads at once (every operation but moving, assigning and
// destroying); a config and a guard by one thread at a time. Each client
// runs one background thread (the watchdog, wake-ups, the lost-lock and log
// callbacks).
//
// Durations are std::chrono durations, rounded up to whole milliseconds.
// A wait of zero or less tries once; a wait longer than a year (the C
// library's RLOCK_MAX_DURATION_MS) waits for ever. A lease is 1 ms to a
// year; a zero lease means the watchdog's (as RLOCK_LEASE_WATCHDOG).
// try_lock_until(t) turns t into a wait once, at the call, from t's own
// clock; the library then waits on the monotonic clock.
//
// Errors: every failure throws rlock::error, a std::system_error whose
// code() is in rlock::category() ("rlock", values the rlock_status codes,
// comparable with rlock::errc: e.code() == rlock::errc::lost) and whose
// what() holds the library's message for the failure (rlock_error_last())
// followed by rlock_strerror()'s text. Failures a caller handles
// differently have subclasses: lost_lock, wrong_type, connection_error,
// auth_error, deadlock_error, replica_error, canceled. A wait that ends
// with the lock held elsewhere (RLOCK_ELOCKED) is not an exception:
// try_lock*, acquire() return false. unlock() throws nothing (the
// standard's Lockable contract: guards call it from destructors); its
// failure is lost, so use release() (which throws) or check() where a lost
// lock matters.
#ifndef RLOCK_HPP
#define RLOCK_HPP

#include "rlock.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace rlock {

// ---- errors ----------------------------------------------------------------

/// rlock_status as an error code enum (0, success, has no member).
enum class errc : int {
  invalid = RLOCK_EINVAL,        ///< bad argument, or an empty object
  no_memory = RLOCK_ENOMEM,      ///< allocation failed
  io = RLOCK_EIO,                ///< server unreachable, connection broke
  timeout = RLOCK_ETIMEOUT,      ///< server did not answer in time
  protocol = RLOCK_EPROTO,       ///< reply not understood
  server = RLOCK_ESERVER,        ///< error reply
  auth = RLOCK_EAUTH,            ///< authentication, SELECT or ACL refused
  wrong_type = RLOCK_EWRONGTYPE, ///< the key is not a lock of this family
  locked = RLOCK_ELOCKED,        ///< held by another owner for the whole wait
  not_held = RLOCK_ENOTHELD,     ///< released by an owner not holding it
  lost = RLOCK_ELOST,            ///< expired or deleted while held
  closed = RLOCK_ECLOSED,        ///< client of another process, or closing
  canceled = RLOCK_ECANCELED,    ///< the wait's cancel token fired
  deadlock = RLOCK_EDEADLK,      ///< waiting would deadlock
  replica = RLOCK_EREPLICA,      ///< no replica confirmed the write
  held = RLOCK_EHELD             ///< a non-reentrant lock asked again
};

namespace detail {
class category_impl final : public std::error_category {
public:
  const char *name() const noexcept override { return "rlock"; }
  std::string message(int code) const override { return rlock_strerror(code); }
  // The portable conditions a few codes mean, so that
  // e.code() == std::errc::timed_out works; the others stay rlock's.
  std::error_condition
  default_error_condition(int code) const noexcept override {
    switch (code) {
    case RLOCK_EINVAL:
      return std::errc::invalid_argument;
    case RLOCK_ENOMEM:
      return std::errc::not_enough_memory;
    case RLOCK_EIO:
      return std::errc::io_error;
    case RLOCK_ETIMEOUT:
      return std::errc::timed_out;
    case RLOCK_EAUTH:
      return std::errc::permission_denied;
    case RLOCK_ENOTHELD:
      return std::errc::operation_not_permitted;
    case RLOCK_ECANCELED:
      return std::errc::operation_canceled;
    case RLOCK_EDEADLK:
    case RLOCK_EHELD: // what std::mutex::lock may say when it is re-entered
      return std::errc::resource_deadlock_would_occur;
    default:
      return std::error_condition(code, *this);
    }
  }
};
} // namespace detail

/// The category of rlock's status codes, named "rlock"; one object per
/// program.
inline const std::error_category &category() noexcept {
  static const detail::category_impl instance;
  return instance;
}

inline std::error_code make_error_code(errc e) noexcept {
  return std::error_code(static_cast<int>(e), category());
}

inline std::error_condition make_error_condition(errc e) noexcept {
  return std::error_condition(static_cast<int>(e), category());
}

/// What every rlock failure throws. code() is the status in category();
/// what() is "<the library's message>: <rlock_strerror text>".
class error : public std::system_error {
public:
  error(int status, const std::string &message)
      : std::system_error(std::error_code(status, category()), message),
        message_(std::make_shared<const std::string>(message)) {}
  /// The status as an errc.
  errc status() const noexcept { return static_cast<errc>(code().value()); }
  /// The library's message alone (what rlock_error_last() said).
  const std::string &message() const noexcept { return *message_; }

private:
  std::shared_ptr<const std::string> message_; // copies must not throw
};

/// RLOCK_ELOST: a lock held by the caller expired or was deleted.
class lost_lock : public error {
public:
  explicit lost_lock(const std::string &m) : error(RLOCK_ELOST, m) {}
};
/// RLOCK_EWRONGTYPE: the key holds something that is not such a lock.
class wrong_type : public error {
public:
  explicit wrong_type(const std::string &m) : error(RLOCK_EWRONGTYPE, m) {}
};
/// RLOCK_EIO or RLOCK_ETIMEOUT: the server is unreachable or too slow.
class connection_error : public error {
public:
  connection_error(int status, const std::string &m) : error(status, m) {}
};
/// RLOCK_EAUTH: authentication, database selection or an ACL right refused.
class auth_error : public error {
public:
  explicit auth_error(const std::string &m) : error(RLOCK_EAUTH, m) {}
};
/// RLOCK_EDEADLK: e.g. a write lock asked for by a holder of read holds.
class deadlock_error : public error {
public:
  explicit deadlock_error(const std::string &m) : error(RLOCK_EDEADLK, m) {}
};
/// RLOCK_EREPLICA: no replica confirmed the write in time.
class replica_error : public error {
public:
  explicit replica_error(const std::string &m) : error(RLOCK_EREPLICA, m) {}
};
/// RLOCK_ECANCELED: the wait's cancel token fired.
class canceled : public error {
public:
  explicit canceled(const std::string &m) : error(RLOCK_ECANCELED, m) {}
};

namespace detail {

// The calling thread's message for `status`, read right after the failing
// call: rlock_error_last() when it describes that status, else the code's
// description.
inline std::string last_message(int status) {
  const rlock_error *e = rlock_error_last();
  if (e->code == status && e->message[0] != '\0')
    return e->message;
  return rlock_strerror(status);
}

[[noreturn]] inline void throw_error(int status, const std::string &m) {
  switch (status) {
  case RLOCK_ELOST:
    throw lost_lock(m);
  case RLOCK_EWRONGTYPE:
    throw wrong_type(m);
  case RLOCK_EIO:
  case RLOCK_ETIMEOUT:
    throw connection_error(status, m);
  case RLOCK_EAUTH:
    throw auth_error(m);
  case RLOCK_EDEADLK:
    throw deadlock_error(m);
  case RLOCK_EREPLICA:
    throw replica_error(m);
  case RLOCK_ECANCELED:
    throw canceled(m);
  default:
    throw error(status, m);
  }
}

[[noreturn]] inline void throw_status(int status) {
  throw_error(status, last_message(status));
}

inline void check(int status) {
  if (status != RLOCK_OK)
    throw_status(status);
}

// true when acquired, false when held elsewhere for the whole wait.
inline bool acquired(int status) {
  if (status == RLOCK_ELOCKED)
    return false;
  check(status);
  return true;
}

[[noreturn]] inline void throw_empty(const char *type) {
  throw error(RLOCK_EINVAL, std::string(type) +
                                " is empty (default-constructed or moved "
                                "from)");
}

// A NUL-terminated copy of `s` for the C API, which would silently cut a
// string at an embedded NUL.
inline std::string c_string(std::string_view s, const char *what) {
  if (s.find('\0') != std::string_view::npos)
    throw error(RLOCK_EINVAL, std::string(what) + " contains a NUL byte");
  return std::string(s);
}

constexpr std::int64_t max_duration_ms = 365LL * 24 * 3600 * 1000;
constexpr std::int64_t wait_forever = -1;

// `d` in whole milliseconds, rounded up, saturated to +-4e18.
template <class Rep, class Period>
std::int64_t to_ms(std::chrono::duration<Rep, Period> d) {
  using fms = std::chrono::duration<long double, std::milli>;
  const long double v = std::chrono::duration_cast<fms>(d).count();
  constexpr std::int64_t big = 4000000000000000000LL;
  if (!(v < static_cast<long double>(big))) // NaN included
    return big;
  if (v <= -static_cast<long double>(big))
    return -big;
  if constexpr (std::chrono::treat_as_floating_point<Rep>::value) {
    auto ms = static_cast<std::int64_t>(v);
    return static_cast<long double>(ms) < v ? ms + 1 : ms;
  } else {
    return static_cast<std::int64_t>(
        std::chrono::ceil<std::chrono::milliseconds>(d).count());
  }
}

// A wait: 0 (try once) for d <= 0, for ever past a year.
template <class Rep, class Period>
std::int64_t wait_ms(std::chrono::duration<Rep, Period> d) {
  const std::int64_t ms = to_ms(d);
  if (ms <= 0)
    return 0;
  return ms > max_duration_ms ? wait_forever : ms;
}

// The wait until `t` on t's clock, read once now.
template <class Clock, class Duration>
std::int64_t wait_until_ms(std::chrono::time_point<Clock, Duration> t) {
  const auto now = Clock::now();
  return t <= now ? 0 : wait_ms(t - now);
}

} // namespace detail

} // namespace rlock

namespace std {
template <> struct is_error_code_enum<rlock::errc> : true_type {};
} // namespace std

namespace rlock {

// ---- configuration and client ----------------------------------------------

/// rlock_log_level.
enum class log_level : int {
  error = RLOCK_LOG_ERROR,
  warn = RLOCK_LOG_WARN,
  info = RLOCK_LOG_INFO,
  debug = RLOCK_LOG_DEBUG
};

/// rlock_pubsub_mode.
enum class pubsub_mode : int {
  automatic = RLOCK_PUBSUB_AUTO,
  classic = RLOCK_PUBSUB_CLASSIC,
  sharded = RLOCK_PUBSUB_SHARDED
};

/// Called once per lost watchdog hold, on the client's background thread,
/// with the lock's name and the hold's owner field (both borrowed for the
/// call). See rlock_lost_fn. It must not throw (an exception escaping it
/// calls std::terminate) nor destroy its client.
using lost_handler =
    std::function<void(std::string_view name, std::string_view owner)>;
/// Receives the client's log messages (rlock_log_fn): on any thread, with
/// no library lock held; borrowed message. Must not throw (std::terminate).
using log_handler = std::function<void(log_level, std::string_view message)>;

class client;

/// A client configuration (rlock_config): every setter validates, throws
/// rlock::error (errc::invalid, with the library's message) on a bad value
/// and leaves the config unchanged then, and returns *this for chaining.
/// Not thread-safe.
class config {
public:
  /// The defaults (rlock/config.h). Throws on allocation failure.
  config() { detail::check(rlock_config_new(&h_)); }
  ~config() { rlock_config_free(h_); }
  config(config &&o) noexcept
      : h_(std::exchange(o.h_, nullptr)), lost_(std::move(o.lost_)),
        log_(std::move(o.log_)) {}
  config &operator=(config &&o) noexcept {
    if (this != &o) {
      rlock_config_free(std::exchange(h_, std::exchange(o.h_, nullptr)));
      lost_ = std::move(o.lost_);
      log_ = std::move(o.log_);
    }
    return *this;
  }
  config(const config &) = delete;
  config &operator=(const config &) = delete;

  explicit operator bool() const noexcept { return h_ != nullptr; }
  /// The C object, owned by this config.
  rlock_config *native_handle() const noexcept { return h_; }

  /// rlock_config_set_url: redis://, rediss://, unix://, redis-cluster://,
  /// redis-sentinel://... (the forms are in rlock/config.h).
  config &url(std::string_view u) {
    detail::check(rlock_config_set_url(h_, detail::c_string(u, "URL").c_str()));
    return *this;
  }
  /// rlock_config_set_connect_timeout_ms: 1 ms to 1 hour.
  template <class Rep, class Period>
  config &connect_timeout(std::chrono::duration<Rep, Period> d) {
    detail::check(rlock_config_set_connect_timeout_ms(h_, detail::to_ms(d)));
    return *this;
  }
  /// rlock_config_set_unreachable_retry_ms: how long a wait goes on trying
  /// a server it cannot reach (0: not at all); unbounded by default.
  template <class Rep, class Period>
  config &unreachable_retry(std::chrono::duration<Rep, Period> d) {
    detail::check(rlock_config_set_unreachable_retry_ms(h_, detail::to_ms(d)));
    return *this;
  }
  /// The default: a wait tries an unreachable server as long as it lasts.
  config &unreachable_retry_forever() {
    detail::check(
        rlock_config_set_unreachable_retry_ms(h_, RLOCK_RETRY_FOREVER));
    return *this;
  }
  /// rlock_config_set_command_timeout_ms: 1 ms to 1 hour.
  template <class Rep, class Period>
  config &command_timeout(std::chrono::duration<Rep, Period> d) {
    detail::check(rlock_config_set_command_timeout_ms(h_, detail::to_ms(d)));
    return *this;
  }
  /// rlock_config_set_watchdog_timeout_ms: the watchdog lease, 30 ms to a
  /// year.
  template <class Rep, class Period>
  config &watchdog_timeout(std::chrono::duration<Rep, Period> d) {
    detail::check(rlock_config_set_watchdog_timeout_ms(h_, detail::to_ms(d)));
    return *this;
  }
  /// rlock_config_set_fair_wait_timeout_ms.
  template <class Rep, class Period>
  config &fair_wait_timeout(std::chrono::duration<Rep, Period> d) {
    detail::check(rlock_config_set_fair_wait_timeout_ms(h_, detail::to_ms(d)));
    return *this;
  }
  /// rlock_config_set_pool_size: 1 to 1024 command connections.
  config &pool_size(int n) {
    detail::check(rlock_config_set_pool_size(h_, n));
    return *this;
  }
  /// rlock_config_set_pubsub_mode (clusters only).
  config &pubsub(pubsub_mode m) {
    detail::check(rlock_config_set_pubsub_mode(h_, static_cast<int>(m)));
    return *this;
  }
  /// rlock_config_set_fair_deferred_shift: fair locks leave Redisson's
  /// deadline shift pending (only where every client is rlock).
  config &fair_deferred_shift(bool on) {
    detail::check(rlock_config_set_fair_deferred_shift(h_, on ? 1 : 0));
    return *this;
  }
  /// rlock_config_set_replica_sync: WAIT for a replica after each write.
  config &replica_sync(bool on) {
    detail::check(rlock_config_set_replica_sync(h_, on ? 1 : 0));
    return *this;
  }
  /// rlock_config_set_replica_sync_timeout_ms: 1 ms to 60 s.
  template <class Rep, class Period>
  config &replica_sync_timeout(std::chrono::duration<Rep, Period> d) {
    detail::check(
        rlock_config_set_replica_sync_timeout_ms(h_, detail::to_ms(d)));
    return *this;
  }
  /// rlock_config_set_tls_ca: CA file and/or directory; nullptr for
  /// either (both: the URL's, or the system's store).
  config &tls_ca(const char *ca_file, const char *ca_dir = nullptr) {
    detail::check(rlock_config_set_tls_ca(h_, ca_file, ca_dir));
    return *this;
  }
  /// rlock_config_set_tls_cert: a client certificate and its key (both,
  /// or both nullptr).
  config &tls_cert(const char *cert_file, const char *key_file) {
    detail::check(rlock_config_set_tls_cert(h_, cert_file, key_file));
    return *this;
  }
  /// rlock_config_set_tls_server_name (nullptr: the URL's, or each host).
  config &tls_server_name(const char *server_name) {
    detail::check(rlock_config_set_tls_server_name(h_, server_name));
    return *this;
  }
  /// rlock_config_set_tls_insecure: no certificate checks (tests only).
  config &tls_insecure(bool insecure) {
    detail::check(rlock_config_set_tls_insecure(h_, insecure ? 1 : 0));
    return *this;
  }
  /// rlock_config_set_password: user (nullptr: none) and password
  /// (both nullptr: the URL's).
  config &password(const char *user, const char *pass) {
    detail::check(rlock_config_set_password(h_, user, pass));
    return *this;
  }
  /// rlock_config_set_subscription_linger.
  template <class Rep, class Period>
  config &subscription_linger(std::chrono::duration<Rep, Period> d,
                              int max_idle) {
    detail::check(
        rlock_config_set_subscription_linger(h_, detail::to_ms(d), max_idle));
    return *this;
  }
  /// rlock_config_set_lost_callback with a C++ callable (empty: none).
  /// Clients made from this config keep the callable they were made with.
  config &lost_callback(lost_handler fn) {
    if (!fn) {
      detail::check(rlock_config_set_lost_callback(h_, nullptr, nullptr));
      lost_.reset();
      return *this;
    }
    auto box = std::make_shared<lost_handler>(std::move(fn));
    detail::check(
        rlock_config_set_lost_callback(h_, &lost_trampoline, box.get()));
    lost_ = std::move(box);
    return *this;
  }
  /// rlock_config_set_lost_callback as in C; `userdata` must outlive
  /// every client made from this config.
  config &lost_callback(rlock_lost_fn fn, void *userdata) {
    detail::check(rlock_config_set_lost_callback(h_, fn, userdata));
    lost_.reset();
    return *this;
  }
  /// rlock_config_set_log with a C++ callable (empty: none), up to
  /// `max_level`. Clients keep the callable they were made with.
  config &log(log_handler fn, log_level max_level = log_level::warn) {
    const auto lvl = static_cast<rlock_log_level>(max_level);
    if (!fn) {
      detail::check(rlock_config_set_log(h_, nullptr, lvl, nullptr));
      log_.reset();
      return *this;
    }
    auto box = std::make_shared<log_handler>(std::move(fn));
    detail::check(rlock_config_set_log(h_, &log_trampoline, lvl, box.get()));
    log_ = std::move(box);
    return *this;
  }

private:
  friend class client;
  // noexcept: an exception must not unwind into the library's thread.
  static void lost_trampoline(const char *name, const char *owner,
                              void *ud) noexcept {
    (*static_cast<lost_handler *>(ud))(name, owner);
  }
  static void log_trampoline(rlock_log_level level, const char *message,
                             void *ud) noexcept {
    (*static_cast<log_handler *>(ud))(static_cast<log_level>(level), message);
  }

  rlock_config *h_ = nullptr;
  // Shared with the clients made from this config: the C client keeps the
  // userdata pointers, so each client keeps the callables alive. A setter
  // replaces the box, never changes one a client may be calling.
  std::shared_ptr<lost_handler> lost_;
  std::shared_ptr<log_handler> log_;
};

/// A snapshot of a lock (rlock_lock_inspect), copied out of the library.
struct lock_info {
  struct holder {
    std::string owner;  ///< "<client id>:<owner>", ":write" for a writer
    std::int64_t holds; ///< hold count
  };
  struct waiter {
    std::string owner;                  ///< queued owner field
    std::chrono::milliseconds deadline; ///< time left before its deadline
  };
  bool locked = false; ///< the key existed
  std::string mode;    ///< "read" or "write" for a read-write lock, else ""
  std::string node;    ///< the server that answered, "host:port"
  /// TTL at the snapshot; empty when the lock was free.
  std::optional<std::chrono::milliseconds> ttl;
  std::vector<holder> holders;
  std::vector<waiter> queue;    ///< a fair lock's waiters, next first
  std::size_t queue_length = 0; ///< all waiters (may exceed queue.size())
};

/// One lock found by client::list_locks().
struct listed_lock {
  std::string name;
  std::string kind; ///< "reentrant", "fair", "read-write" or "fenced"
  lock_info info;
};

/// One semaphore, permit-expirable semaphore or latch found by
/// client::list_syncs() or a count found by client::list_counts().
struct listed_sync {
  std::string name;
  /// list_syncs(): "semaphore", "latch" or "permit-expirable-semaphore";
  /// list_counts(): "permit-expirable-semaphore" or "count".
  std::string kind;
  std::int64_t value = 0;  ///< available permits, or a latch's count
  std::int64_t leased = 0; ///< permits leased now (permit-expirable)
  /// Connections subscribed to its channel (list_syncs()); -1 from
  /// list_counts(), which does not ask.
  std::int64_t subscribers = -1;
  std::string node; ///< "host:port" of the server holding its key
};

namespace detail {
inline std::string str(const char *s) { return s ? s : ""; }

inline lock_info copy_info(const rlock_lock_info *in) {
  lock_info out;
  out.locked = rlock_lock_info_locked(in) != 0;
  out.mode = str(rlock_lock_info_mode(in));
  out.node = str(rlock_lock_info_node(in));
  const std::int64_t ttl = rlock_lock_info_ttl_ms(in);
  if (ttl >= 0)
    out.ttl = std::chrono::milliseconds(ttl);
  const std::size_t nh = rlock_lock_info_holder_count(in);
  for (std::size_t i = 0; i < nh; i++)
    out.holders.push_back({str(rlock_lock_info_holder_owner(in, i)),
                           rlock_lock_info_holder_holds(in, i)});
  const std::size_t nq = rlock_lock_info_queue_count(in);
  for (std::size_t i = 0; i < nq; i++)
    out.queue.push_back(
        {str(rlock_lock_info_queue_owner(in, i)),
         std::chrono::milliseconds(rlock_lock_info_queue_deadline_ms(in, i))});
  out.queue_length = rlock_lock_info_queue_length(in);
  return out;
}

struct info_deleter {
  void operator()(rlock_lock_info *i) const noexcept {
    rlock_lock_info_free(i);
  }
};
} // namespace detail

/// An explicit owner (rlock_owner_new): holds taken for it belong to it,
/// not to a thread, so they may be released from any thread. Use with
/// acquire_options::owner(), the `const owner&` overloads, or
/// mutex::for_owner(). Moves; a moved-from owner is empty (id() 0) and
/// refused by every call.
class owner {
public:
  /// A number never used before in this process.
  owner() noexcept : id_(rlock_owner_new()) {}
  /// A given non-zero number (e.g. to act for a Java thread id).
  explicit owner(std::uint64_t id) : id_(id) {
    if (id == 0)
      throw error(RLOCK_EINVAL, "owner number 0 stands for the calling "
                                "thread: give a non-zero number");
  }
  owner(owner &&o) noexcept : id_(std::exchange(o.id_, 0)) {}
  owner &operator=(owner &&o) noexcept {
    if (this != &o)
      id_ = std::exchange(o.id_, 0);
    return *this;
  }
  owner(const owner &) = delete;
  owner &operator=(const owner &) = delete;

  std::uint64_t id() const noexcept { return id_; }
  explicit operator bool() const noexcept { return id_ != 0; }
  /// The calling thread's owner number (rlock_owner_thread).
  static std::uint64_t this_thread() noexcept { return rlock_owner_thread(); }

  /// id(), or throws for an empty owner.
  std::uint64_t checked_id() const {
    if (id_ == 0)
      detail::throw_empty("rlock::owner");
    return id_;
  }

private:
  std::uint64_t id_;
};

/// A connection to Redis shared by every lock made from it (rlock_client).
/// Thread-safe. The constructor does not connect: the first operation does.
class client {
public:
  /// An empty client.
  client() noexcept = default;
  /// A client for `url` with the other settings at their defaults.
  explicit client(std::string_view url) : client(config().url(url)) {}
  /// A client with `cfg`'s settings (copied; cfg may be destroyed after).
  explicit client(const config &cfg) : lost_(cfg.lost_), log_(cfg.log_) {
    if (!cfg)
      detail::throw_empty("rlock::config");
    detail::check(rlock_client_new(&h_, cfg.h_));
  }
  /// Frees the client (rlock_client_free): holds still held are not
  /// released. Every mutex made from it must be gone already.
  ~client() { rlock_client_free(h_); }
  client(client &&o) noexcept
      : h_(std::exchange(o.h_, nullptr)), lost_(std::move(o.lost_)),
        log_(std::move(o.log_)) {}
  client &operator=(client &&o) noexcept {
    if (this != &o) {
      rlock_client_free(std::exchange(h_, std::exchange(o.h_, nullptr)));
      lost_ = std::move(o.lost_);
      log_ = std::move(o.log_);
    }
    return *this;
  }
  client(const client &) = delete;
  client &operator=(const client &) = delete;

  explicit operator bool() const noexcept { return h_ != nullptr; }
  rlock_client *native_handle() const noexcept { return h_; }

  /// Free the client now, reporting what the destructor cannot:
  /// errc::deadlock from its own lost-lock callback, errc::closed in a
  /// fork()ed child (the client then stays as it was, unusable there).
  void close() {
    detail::check(rlock_client_free(h_));
    h_ = nullptr;
  }
  /// The client's identity, a 36-character UUID (rlock_client_id).
  std::string_view id() const { return rlock_client_id(handle()); }
  /// "single", "cluster" or "sentinel" (rlock_client_topology).
  std::string_view topology() const { return rlock_client_topology(handle()); }
  /// The owner field this client writes for the calling thread:
  /// "<client id>:<thread's owner number>".
  std::string owner_field() const {
    char buf[RLOCK_OWNER_MAX];
    detail::check(rlock_client_owner(buf, sizeof buf, h_));
    return buf;
  }
  /// The owner field this client writes for `o`: "<client id>:<o.id()>".
  std::string owner_field(const owner &o) const {
    return std::string(id()) + ":" + std::to_string(o.checked_id());
  }
  /// A PING's round-trip time (rlock_client_ping).
  std::chrono::microseconds ping() {
    std::int64_t us = 0;
    detail::check(rlock_client_ping(h_, &us));
    return std::chrono::microseconds(us);
  }
  /// The client's counters (rlock_client_stats).
  rlock_stats stats() const {
    rlock_stats st{};
    detail::check(rlock_client_stats(h_, &st, sizeof st));
    return st;
  }
  /// The locks held now whose names match the glob `pattern`, on every
  /// server of the client's topology (rlock_client_list_locks: SCAN, never
  /// KEYS; not one snapshot).
  std::vector<listed_lock> list_locks(std::string_view pattern = "*") {
    list_state st;
    const std::string pat = detail::c_string(pattern, "pattern");
    const int rc = rlock_client_list_locks(h_, pat.c_str(), &list_one, &st);
    if (st.failure)
      std::rethrow_exception(st.failure);
    detail::check(rc);
    return std::move(st.found);
  }
  /// The semaphores, latches and permit-expirable semaphores matching
  /// `pattern` that a client waits on now, and the permit-expirable
  /// semaphores with permits leased (rlock_client_list_syncs: PUBSUB and
  /// SCAN, nothing written).
  std::vector<listed_sync> list_syncs(std::string_view pattern = "*") {
    return list_numbers(pattern, rlock_client_list_syncs, &sync_one);
  }
  /// Every string of decimal digits matching `pattern` (semaphores,
  /// latches and any other counter: give a pattern only yours match) and
  /// every permit-expirable semaphore with permits leased
  /// (rlock_client_list_counts: SCAN, each string read).
  std::vector<listed_sync> list_counts(std::string_view pattern = "*") {
    return list_numbers(pattern, rlock_client_list_counts, &count_one);
  }
  /// Who is behind an owner field or a client id: its registry record, or
  /// nothing for a Redisson client or one without a record
  /// (rlock_client_whois).
  std::optional<rlock_client_record> whois(std::string_view owner) {
    const std::string o = detail::c_string(owner, "owner");
    rlock_client_record rec{};
    const int rc = rlock_client_whois(h_, o.c_str(), &rec);
    detail::check(rc < 0 ? rc : RLOCK_OK);
    return rc == 1 ? std::optional<rlock_client_record>(rec) : std::nullopt;
  }
  /// The client's metrics in the Prometheus text format, or OpenMetrics'
  /// (rlock_client_metrics_text).
  std::string metrics_text(bool openmetrics = false) const {
    const unsigned flags = openmetrics ? RLOCK_METRICS_OPENMETRICS : 0;
    std::string out(4096, '\0');
    for (;;) {
      std::size_t needed = 0;
      const int rc =
          rlock_client_metrics_text(h_, out.data(), out.size(), &needed, flags);
      if (rc == RLOCK_OK) {
        out.resize(std::strlen(out.c_str()));
        return out;
      }
      if (needed <= out.size())
        detail::check(rc);
      out.assign(needed + 1024, '\0'); // the text may grow meanwhile
    }
  }

private:
  struct list_state {
    std::vector<listed_lock> found;
    std::exception_ptr failure;
  };
  struct sync_state {
    std::vector<listed_sync> found;
    std::exception_ptr failure;
  };
  // Called by the C library on this thread: nothing may unwind through it.
  static int list_one(const char *name, const char *kind,
                      const rlock_lock_info *info, void *arg) noexcept {
    auto *st = static_cast<list_state *>(arg);
    try {
      st->found.push_back({name, kind, detail::copy_info(info)});
      return 0;
    } catch (...) {
      st->failure = std::current_exception();
      return 1;
    }
  }
  static int sync_one(const char *name, const char *kind, std::int64_t value,
                      std::int64_t leased, std::int64_t subscribers,
                      const char *node, void *arg) noexcept {
    auto *st = static_cast<sync_state *>(arg);
    try {
      st->found.push_back({name, kind, value, leased, subscribers, node});
      return 0;
    } catch (...) {
      st->failure = std::current_exception();
      return 1;
    }
  }
  static int count_one(const char *name, const char *kind,
                       std::int64_t available, std::int64_t leased,
                       const char *node, void *arg) noexcept {
    return sync_one(name, kind, available, leased, -1, node, arg);
  }
  template <typename Fn, typename Cb>
  std::vector<listed_sync> list_numbers(std::string_view pattern, Fn list,
                                        Cb cb) {
    sync_state st;
    const std::string pat = detail::c_string(pattern, "pattern");
    const int rc = list(h_, pat.c_str(), cb, &st);
    if (st.failure)
      std::rethrow_exception(st.failure);
    detail::check(rc);
    return std::move(st.found);
  }
  rlock_client *handle() const {
    if (h_ == nullptr)
      detail::throw_empty("rlock::client");
    return h_;
  }

  rlock_client *h_ = nullptr;
  std::shared_ptr<lost_handler> lost_; // what the C client calls back
  std::shared_ptr<log_handler> log_;
};

/// A cancel token (rlock_cancel): fire() makes the waits using it give up
/// (errc::canceled) within about 20 ms. fire() is safe from any thread and
/// from a signal handler (through native_handle(): rlock_cancel_fire).
class cancel_token {
public:
  cancel_token() { detail::check(rlock_cancel_new(&h_)); }
  ~cancel_token() { rlock_cancel_free(h_); }
  cancel_token(cancel_token &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  cancel_token &operator=(cancel_token &&o) noexcept {
    if (this != &o)
      rlock_cancel_free(std::exchange(h_, std::exchange(o.h_, nullptr)));
    return *this;
  }
  cancel_token(const cancel_token &) = delete;
  cancel_token &operator=(const cancel_token &) = delete;

  explicit operator bool() const noexcept { return h_ != nullptr; }
  rlock_cancel *native_handle() const noexcept { return h_; }
  void fire() noexcept { rlock_cancel_fire(h_); }
  void reset() noexcept { rlock_cancel_reset(h_); }
  bool fired() const noexcept { return h_ && rlock_cancel_fired(h_) != 0; }

private:
  rlock_cancel *h_ = nullptr;
};

/// How to acquire (rlock_acquire_options), built by chaining:
///   m.acquire(rlock::acquire_options().wait(5s).lease(30s));
/// Defaults: wait for ever, watchdog lease, the calling thread, no cancel
/// token, no fencing token wanted. Whatever it refers to (cancel token,
/// token variable) must outlive the acquisition.
class acquire_options {
public:
  acquire_options() noexcept = default;
  /// Wait at most `d` (<= 0: try once; over a year: for ever).
  template <class Rep, class Period>
  acquire_options &wait(std::chrono::duration<Rep, Period> d) {
    wait_ = detail::wait_ms(d);
    return *this;
  }
  acquire_options &wait_forever() noexcept {
    wait_ = detail::wait_forever;
    return *this;
  }
  /// One attempt (a fair lock's try never queues).
  acquire_options &try_once() noexcept {
    wait_ = 0;
    return *this;
  }
  /// A fixed lease: the lock expires after `d`, released or not.
  template <class Rep, class Period>
  acquire_options &lease(std::chrono::duration<Rep, Period> d) {
    lease_ = detail::to_ms(d);
    return *this;
  }
  /// The watchdog's lease, renewed while held (the default).
  acquire_options &watchdog() noexcept {
    lease_ = 0;
    return *this;
  }
  acquire_options &cancel(const cancel_token &c) noexcept {
    cancel_ = c.native_handle();
    return *this;
  }
  /// Acquire for `o` instead of the calling thread.
  acquire_options &owner(const rlock::owner &o) {
    owner_ = o.checked_id();
    return *this;
  }
  /// A fenced lock's acquisition stores its fencing token in `out`.
  acquire_options &token(std::int64_t &out) noexcept {
    token_ = &out;
    return *this;
  }
  /// The C struct these options stand for.
  rlock_acquire_options native() const noexcept {
    rlock_acquire_options o{};
    rlock_acquire_options_init(&o, RLOCK_ACQUIRE_OPTIONS_VERSION);
    o.wait_ms = wait_;
    o.lease_ms = lease_;
    o.cancel = cancel_;
    o.owner = owner_;
    o.token = token_;
    return o;
  }

private:
  std::int64_t wait_ = detail::wait_forever;
  std::int64_t lease_ = 0;
  rlock_cancel *cancel_ = nullptr;
  std::uint64_t owner_ = 0;
  std::int64_t *token_ = nullptr;
};

namespace detail {

// The Lockable and TimedLockable operations of every lock type, from two
// of the derived type's: int native_acquire(rlock_acquire_options&) and
// int native_release(), each the C call's status.
template <class Derived> class lockable {
public:
  /// Acquire as `o` says: true when held, false when another owner held
  /// the lock for the whole wait; throws rlock::error for anything else.
  bool acquire(const acquire_options &o) {
    rlock_acquire_options c = o.native();
    return acquired(self().native_acquire(c));
  }
  /// Wait as long as it takes; watchdog lease.
  void lock() { check_acquire(acquire_options()); }
  /// Wait as long as it takes; a fixed lease.
  template <class Rep, class Period>
  void lock(std::chrono::duration<Rep, Period> lease) {
    check_acquire(acquire_options().lease(lease));
  }
  /// One non-blocking attempt (a round trip, no waiting): what std::lock
  /// and std::scoped_lock need to back off.
  bool try_lock() { return acquire(acquire_options().try_once()); }
  template <class Rep, class Period>
  bool try_lock_for(std::chrono::duration<Rep, Period> wait) {
    return acquire(acquire_options().wait(wait));
  }
  template <class Rep, class Period, class LRep, class LPeriod>
  bool try_lock_for(std::chrono::duration<Rep, Period> wait,
                    std::chrono::duration<LRep, LPeriod> lease) {
    return acquire(acquire_options().wait(wait).lease(lease));
  }
  template <class Clock, class Duration>
  bool try_lock_until(std::chrono::time_point<Clock, Duration> t) {
    return acquire(with_wait(acquire_options(), wait_until_ms(t)));
  }
  template <class Clock, class Duration, class LRep, class LPeriod>
  bool try_lock_until(std::chrono::time_point<Clock, Duration> t,
                      std::chrono::duration<LRep, LPeriod> lease) {
    return acquire(with_wait(acquire_options().lease(lease), wait_until_ms(t)));
  }
  /// Release one hold, reporting nothing: the Lockable contract says
  /// unlock() throws nothing, and guards call it from destructors. A lock
  /// lost meanwhile, or a server that cannot be reached, goes unnoticed
  /// here (the lock then expires with its lease): use release() or check()
  /// where that matters.
  void unlock() noexcept { (void)self().native_release(); }
  /// Release one hold; throws lost_lock when it had expired or been
  /// deleted, rlock::error with errc::not_held when not held,
  /// connection_error, ...
  void release() { check(self().native_release()); }
  /// release() with the failure in `ec` instead of thrown.
  void release(std::error_code &ec) noexcept {
    const int rc = self().native_release();
    ec = rc == RLOCK_OK ? std::error_code()
                        : std::error_code(rc, rlock::category());
  }

protected:
  lockable() = default;
  ~lockable() = default;
  lockable(const lockable &) = default;
  lockable &operator=(const lockable &) = default;

private:
  Derived &self() noexcept { return static_cast<Derived &>(*this); }
  void check_acquire(const acquire_options &o) {
    rlock_acquire_options c = o.native();
    check(self().native_acquire(c));
  }
  static acquire_options with_wait(acquire_options o, std::int64_t ms) {
    if (ms == wait_forever)
      return o.wait_forever();
    return o.wait(std::chrono::milliseconds(ms));
  }
};

} // namespace detail

// ---- locks -----------------------------------------------------------------

/// The kinds of lock object (rlock/lock.h).
enum class kind {
  reentrant,        ///< rlock_lock_new: Redisson's RLock
  fair,             ///< rlock_lock_new_fair: RFairLock, waiters served in order
  read,             ///< rlock_lock_new_read: RReadWriteLock.readLock()
  write,            ///< rlock_lock_new_write: RReadWriteLock.writeLock()
  fenced,           ///< rlock_lock_new_fenced: RFencedLock, a token per hold
  spin,             ///< rlock_lock_new_spin: RSpinLock, waits by back-off
  nonreentrant,     ///< rlock_lock_new_nonreentrant: a re-entry throws
                    ///< (errc::held), Redisson's RedissonNonReentrantLock
  nonreentrant_fair ///< rlock_lock_new_fair_nonreentrant
};

template <class L> class owned;

/// One distributed lock object (rlock_lock) of any kind, on a client that
/// must outlive it. Lockable and TimedLockable: std::unique_lock,
/// std::scoped_lock and std::lock work with it. Holds belong to the
/// calling thread (reentrant: a holder may acquire again, and releases as
/// often), or to an explicit owner (for_owner(), acquire_options::owner).
/// The object carries no per-thread state: many threads may share one.
/// Destroying it does not release what is held.
class mutex : public detail::lockable<mutex> {
public:
  /// An empty mutex.
  mutex() noexcept = default;
  /// A lock object for `name` (1 to 1024 bytes; a '{' or '}' needs a
  /// non-empty {tag}) of kind `k` on `c`. Does no I/O.
  mutex(client &c, std::string_view name,
        rlock::kind k = rlock::kind::reentrant)
      : kind_(k) {
    const std::string n = detail::c_string(name, "lock name");
    detail::check(create(k)(&h_, c.native_handle(), n.c_str()));
  }
  static mutex reentrant(client &c, std::string_view name) {
    return mutex(c, name, rlock::kind::reentrant);
  }
  static mutex fair(client &c, std::string_view name) {
    return mutex(c, name, rlock::kind::fair);
  }
  static mutex fenced(client &c, std::string_view name) {
    return mutex(c, name, rlock::kind::fenced);
  }
  static mutex spin(client &c, std::string_view name) {
    return mutex(c, name, rlock::kind::spin);
  }
  /// A lock its holder cannot take again: lock() by the holder throws
  /// rlock::error with errc::held (== std::errc::
  /// resource_deadlock_would_occur, as std::mutex may), try_lock() too.
  static mutex nonreentrant(client &c, std::string_view name) {
    return mutex(c, name, rlock::kind::nonreentrant);
  }
  static mutex nonreentrant_fair(client &c, std::string_view name) {
    return mutex(c, name, rlock::kind::nonreentrant_fair);
  }
  /// The read half of the read-write lock `name` (see read_write_lock).
  static mutex read(client &c, std::string_view name) {
    return mutex(c, name, rlock::kind::read);
  }
  /// The write half of the read-write lock `name`.
  static mutex write(client &c, std::string_view name) {
    return mutex(c, name, rlock::kind::write);
  }
  ~mutex() { rlock_lock_free(h_); }
  mutex(mutex &&o) noexcept
      : h_(std::exchange(o.h_, nullptr)), kind_(o.kind_) {}
  mutex &operator=(mutex &&o) noexcept {
    if (this != &o) {
      rlock_lock_free(std::exchange(h_, std::exchange(o.h_, nullptr)));
      kind_ = o.kind_;
    }
    return *this;
  }
  mutex(const mutex &) = delete;
  mutex &operator=(const mutex &) = delete;

  explicit operator bool() const noexcept { return h_ != nullptr; }
  rlock_lock *native_handle() const noexcept { return h_; }
  rlock::kind kind() const noexcept { return kind_; }
  /// The lock's name ("" when empty); valid as long as the object.
  std::string_view name() const noexcept {
    return h_ ? rlock_lock_name(h_) : "";
  }

  /// rlock_lock_acquire_opts's status (for code that maps statuses itself).
  int native_acquire(rlock_acquire_options &o) noexcept {
    return rlock_lock_acquire_opts(h_, &o);
  }
  /// rlock_lock_release's status.
  int native_release() noexcept { return rlock_lock_release(h_); }

  using detail::lockable<mutex>::release;
  /// Release one hold of `o`, from any thread.
  void release(const owner &o) {
    detail::check(rlock_lock_release_owner(h_, o.checked_id()));
  }
  /// A Lockable view acting for `o` (see owned); `o` and this mutex must
  /// outlive it.
  owned<mutex> for_owner(const owner &o);

  /// Delete the lock whoever holds it and wake a waiter; true when there
  /// was a lock to delete (rlock_lock_force_release).
  bool force_release() {
    int deleted = 0;
    detail::check(rlock_lock_force_release(&deleted, h_));
    return deleted != 0;
  }
  /// Whether the calling thread's hold is still good, answered locally
  /// (rlock_lock_check): returns when it is; throws lost_lock once the
  /// watchdog found it gone or its lease ran out, rlock::error with
  /// errc::not_held when the thread holds nothing here.
  void check() { detail::check(rlock_lock_check(h_)); }
  void check(const owner &o) {
    detail::check(rlock_lock_check_owner(h_, o.checked_id()));
  }
  /// Give the calling thread's fixed-lease hold a fresh lease: it now
  /// expires `lease` from now (rlock_lock_extend; redis-py's reacquire).
  /// Throws lost_lock when the hold is gone, rlock::error with
  /// errc::not_held when the thread holds nothing here, errc::invalid for
  /// a hold the watchdog renews.
  void extend(std::chrono::milliseconds lease) {
    detail::check(rlock_lock_extend(h_, lease.count()));
  }
  void extend(const owner &o, std::chrono::milliseconds lease) {
    detail::check(rlock_lock_extend_owner(h_, o.checked_id(), lease.count()));
  }
  /// Whether anyone holds the lock (a round trip).
  bool is_locked() {
    int v = 0;
    detail::check(rlock_lock_is_locked(&v, h_));
    return v != 0;
  }
  /// Whether the calling thread (or `o`) holds it (a round trip).
  bool is_held() {
    int v = 0;
    detail::check(rlock_lock_is_held(&v, h_));
    return v != 0;
  }
  bool is_held(const owner &o) {
    int v = 0;
    detail::check(rlock_lock_is_held_owner(&v, h_, o.checked_id()));
    return v != 0;
  }
  /// The calling thread's (or `o`'s) hold count on the server.
  std::int64_t hold_count() {
    std::int64_t n = 0;
    detail::check(rlock_lock_hold_count(&n, h_));
    return n;
  }
  std::int64_t hold_count(const owner &o) {
    std::int64_t n = 0;
    detail::check(rlock_lock_hold_count_owner(&n, h_, o.checked_id()));
    return n;
  }
  /// The lock's time to live; empty when nobody holds it.
  std::optional<std::chrono::milliseconds> ttl() {
    std::int64_t ms = 0;
    detail::check(rlock_lock_ttl(&ms, h_));
    if (ms < 0)
      return std::nullopt;
    return std::chrono::milliseconds(ms);
  }
  /// The lock's whole state, read in one atomic step.
  lock_info inspect() {
    rlock_lock_info *raw = nullptr;
    detail::check(rlock_lock_inspect(&raw, h_));
    std::unique_ptr<rlock_lock_info, detail::info_deleter> info(raw);
    return detail::copy_info(info.get());
  }
  /// The latest fencing token issued for the name (0 if none ever was):
  /// while this thread holds a fenced lock, its own (rlock_lock_token).
  std::int64_t token() {
    std::int64_t t = 0;
    detail::check(rlock_lock_token(&t, h_));
    return t;
  }

private:
  template <class L> friend class owned;
  using create_fn = int (*)(rlock_lock **, rlock_client *, const char *);
  static create_fn create(rlock::kind k) noexcept {
    switch (k) {
    case rlock::kind::fair:
      return rlock_lock_new_fair;
    case rlock::kind::read:
      return rlock_lock_new_read;
    case rlock::kind::write:
      return rlock_lock_new_write;
    case rlock::kind::fenced:
      return rlock_lock_new_fenced;
    case rlock::kind::spin:
      return rlock_lock_new_spin;
    case rlock::kind::nonreentrant:
      return rlock_lock_new_nonreentrant;
    case rlock::kind::nonreentrant_fair:
      return rlock_lock_new_fair_nonreentrant;
    case rlock::kind::reentrant:
    default:
      return rlock_lock_new;
    }
  }
  int native_release(std::uint64_t o) noexcept {
    return rlock_lock_release_owner(h_, o);
  }

  rlock_lock *h_ = nullptr;
  rlock::kind kind_ = rlock::kind::reentrant;
};

/// A Lockable view of a mutex, multilock or redlock that acquires and
/// releases for an explicit owner instead of the calling thread, so that
/// a std::unique_lock taken on one thread may be unlocked on another.
/// Copyable (a reference); the lock object and the owner must outlive it.
template <class L> class owned : public detail::lockable<owned<L>> {
public:
  owned(L &l, const owner &o) : l_(&l), owner_(o.checked_id()) {}
  /// The C call's status, for the owner.
  int native_acquire(rlock_acquire_options &o) noexcept {
    o.owner = owner_;
    return l_->native_acquire(o);
  }
  int native_release() noexcept { return l_->native_release(owner_); }
  L &target() const noexcept { return *l_; }
  std::uint64_t owner_id() const noexcept { return owner_; }

private:
  L *l_;
  std::uint64_t owner_;
};

inline owned<mutex> mutex::for_owner(const owner &o) {
  return owned<mutex>(*this, o);
}

/// The read and write halves of the read-write lock `name`
/// (Redisson's RReadWriteLock): any number of readers, or one writer.
/// Also SharedTimedLockable: lock()/try_lock*()/unlock() take the write
/// half, lock_shared()/try_lock_shared*()/unlock_shared() the read half,
/// so std::unique_lock and std::shared_lock work with it. A holder of read
/// holds asking for the write half gets deadlock_error.
class read_write_lock {
public:
  read_write_lock() noexcept = default;
  read_write_lock(client &c, std::string_view name)
      : read_(c, name, kind::read), write_(c, name, kind::write) {}

  explicit operator bool() const noexcept { return static_cast<bool>(read_); }
  mutex &read_lock() noexcept { return read_; }
  mutex &write_lock() noexcept { return write_; }

  void lock() { write_.lock(); }
  bool try_lock() { return write_.try_lock(); }
  template <class Rep, class Period>
  bool try_lock_for(std::chrono::duration<Rep, Period> d) {
    return write_.try_lock_for(d);
  }
  template <class Clock, class Duration>
  bool try_lock_until(std::chrono::time_point<Clock, Duration> t) {
    return write_.try_lock_until(t);
  }
  void unlock() noexcept { write_.unlock(); }

  void lock_shared() { read_.lock(); }
  bool try_lock_shared() { return read_.try_lock(); }
  template <class Rep, class Period>
  bool try_lock_shared_for(std::chrono::duration<Rep, Period> d) {
    return read_.try_lock_for(d);
  }
  template <class Clock, class Duration>
  bool try_lock_shared_until(std::chrono::time_point<Clock, Duration> t) {
    return read_.try_lock_until(t);
  }
  void unlock_shared() noexcept { read_.unlock(); }

private:
  mutex read_, write_;
};

namespace detail {
template <class It>
using iterator_category = typename std::iterator_traits<It>::iterator_category;
template <class... M>
using all_mutex = std::enable_if_t<(std::is_same_v<M, mutex> && ...)>;
template <class It> std::vector<rlock_lock *> handles(It first, It last) {
  std::vector<rlock_lock *> v;
  for (; first != last; ++first)
    v.push_back(static_cast<mutex &>(*first).native_handle());
  return v;
}
} // namespace detail

/// Several mutexes taken as one, all or none, in the order given
/// (rlock_multilock). Lockable. Members may be of any kind and client, and
/// must outlive it; take sets of locks in one global order everywhere
/// (sort_names()), or two multilocks may deadlock each other.
class multilock : public detail::lockable<multilock> {
public:
  multilock() noexcept = default;
  multilock(std::initializer_list<std::reference_wrapper<mutex>> members)
      : multilock(detail::handles(members.begin(), members.end())) {}
  /// multilock m(a, b, c): the members in this order.
  template <class... More, class = detail::all_mutex<More...>>
  explicit multilock(mutex &first, More &...more)
      : multilock(std::vector<rlock_lock *>{first.native_handle(),
                                            more.native_handle()...}) {}
  /// Members from a range of mutex (or reference_wrapper<mutex>).
  template <class It, class = detail::iterator_category<It>>
  multilock(It first, It last) : multilock(detail::handles(first, last)) {}
  ~multilock() { rlock_multilock_free(h_); }
  multilock(multilock &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  multilock &operator=(multilock &&o) noexcept {
    if (this != &o)
      rlock_multilock_free(std::exchange(h_, std::exchange(o.h_, nullptr)));
    return *this;
  }
  multilock(const multilock &) = delete;
  multilock &operator=(const multilock &) = delete;

  explicit operator bool() const noexcept { return h_ != nullptr; }
  rlock_multilock *native_handle() const noexcept { return h_; }

  int native_acquire(rlock_acquire_options &o) noexcept {
    return rlock_multilock_acquire_opts(h_, &o);
  }
  int native_release() noexcept { return rlock_multilock_release(h_); }

  using detail::lockable<multilock>::release;
  void release(const owner &o) {
    detail::check(rlock_multilock_release_owner(h_, o.checked_id()));
  }
  owned<multilock> for_owner(const owner &o) {
    return owned<multilock>(*this, o);
  }
  /// Whether the calling thread (or `o`) holds every member.
  bool is_held() {
    int v = 0;
    detail::check(rlock_multilock_is_held(&v, h_));
    return v != 0;
  }
  bool is_held(const owner &o) {
    int v = 0;
    detail::check(rlock_multilock_is_held_owner(&v, h_, o.checked_id()));
    return v != 0;
  }

private:
  template <class L> friend class owned;
  explicit multilock(const std::vector<rlock_lock *> &members) {
    detail::check(rlock_multilock_new(&h_, members.data(), members.size()));
  }
  int native_release(std::uint64_t o) noexcept {
    return rlock_multilock_release_owner(h_, o);
  }
  rlock_multilock *h_ = nullptr;
};

/// Sort lock names into rlock's canonical lock order (rlock_names_sort:
/// byte-wise), so every process takes a set of locks in the same order.
inline void sort_names(std::vector<std::string> &names) {
  std::vector<const char *> p;
  for (const std::string &n : names)
    p.push_back(n.c_str());
  detail::check(rlock_names_sort(p.data(), p.size()));
  std::vector<std::string> sorted(p.begin(), p.end());
  names.swap(sorted);
}

/// The outcome of a RedLock round (rlock_redlock_result).
struct redlock_result {
  struct member {
    std::error_code status; ///< empty when taken; else why not
    std::string message;    ///< "" when taken
  };
  std::chrono::milliseconds validity{0}; ///< 0 when no quorum
  std::vector<member> members;           ///< in the order given
};

/// A quorum lock over independent servers (rlock_redlock): reentrant
/// mutexes, each from a client of its own on a server of its own, which
/// must outlive it. Lockable. Read the safety note in rlock/redlock.h.
class redlock : public detail::lockable<redlock> {
public:
  redlock() noexcept = default;
  redlock(std::initializer_list<std::reference_wrapper<mutex>> members)
      : redlock(detail::handles(members.begin(), members.end())) {}
  /// redlock m(a, b, c): the members in this order.
  template <class... More, class = detail::all_mutex<More...>>
  explicit redlock(mutex &first, More &...more)
      : redlock(std::vector<rlock_lock *>{first.native_handle(),
                                          more.native_handle()...}) {}
  /// Members from a range of mutex (or reference_wrapper<mutex>).
  template <class It, class = detail::iterator_category<It>>
  redlock(It first, It last) : redlock(detail::handles(first, last)) {}
  ~redlock() { rlock_redlock_free(h_); }
  redlock(redlock &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  redlock &operator=(redlock &&o) noexcept {
    if (this != &o)
      rlock_redlock_free(std::exchange(h_, std::exchange(o.h_, nullptr)));
    return *this;
  }
  redlock(const redlock &) = delete;
  redlock &operator=(const redlock &) = delete;

  explicit operator bool() const noexcept { return h_ != nullptr; }
  rlock_redlock *native_handle() const noexcept { return h_; }

  int native_acquire(rlock_acquire_options &o) noexcept {
    return rlock_redlock_acquire_opts(nullptr, h_, &o);
  }
  int native_release() noexcept { return rlock_redlock_release(h_); }

  using detail::lockable<redlock>::acquire;
  /// acquire(), also telling how each member fared in the last round.
  bool acquire(const acquire_options &o, redlock_result &result) {
    rlock_acquire_options c = o.native();
    rlock_redlock_result *raw = nullptr;
    const int rc = rlock_redlock_acquire_opts(&raw, h_, &c);
    const std::string m = rc == RLOCK_OK ? "" : detail::last_message(rc);
    std::unique_ptr<rlock_redlock_result, result_deleter> res(raw);
    if (res)
      result = copy_result(res.get());
    if (rc == RLOCK_ELOCKED)
      return false;
    if (rc != RLOCK_OK)
      detail::throw_error(rc, m);
    return true;
  }
  using detail::lockable<redlock>::release;
  void release(const owner &o) {
    detail::check(rlock_redlock_release_owner(h_, o.checked_id()));
  }
  owned<redlock> for_owner(const owner &o) { return owned<redlock>(*this, o); }

private:
  template <class L> friend class owned;
  explicit redlock(const std::vector<rlock_lock *> &members) {
    detail::check(rlock_redlock_new(&h_, members.data(), members.size()));
  }
  int native_release(std::uint64_t o) noexcept {
    return rlock_redlock_release_owner(h_, o);
  }
  struct result_deleter {
    void operator()(rlock_redlock_result *r) const noexcept {
      rlock_redlock_result_free(r);
    }
  };
  static redlock_result copy_result(const rlock_redlock_result *r) {
    redlock_result out;
    out.validity =
        std::chrono::milliseconds(rlock_redlock_result_validity_ms(r));
    const std::size_t n = rlock_redlock_result_count(r);
    for (std::size_t i = 0; i < n; i++) {
      const int st = rlock_redlock_result_status(r, i);
      const char *msg = rlock_redlock_result_message(r, i);
      out.members.push_back(
          {st == RLOCK_OK ? std::error_code() : std::error_code(st, category()),
           msg ? msg : ""});
    }
    return out;
  }
  rlock_redlock *h_ = nullptr;
};

// ---- semaphores and the count-down latch -----------------------------------

namespace detail {
// A semaphore's, permit's or latch's options as the C calls take them:
// owner and fencing token mean nothing there, so they are refused.
inline rlock_acquire_options sync_options(const acquire_options &o) {
  rlock_acquire_options c = o.native();
  if (c.owner != 0 || c.token != nullptr)
    throw error(RLOCK_EINVAL, "acquire_options: a semaphore's permits have "
                              "no owner and no fencing token");
  return c;
}
} // namespace detail

/// A semaphore (rlock_semaphore, Redisson's RSemaphore), shaped like
/// std::counting_semaphore: acquire(), try_acquire(), try_acquire_for(),
/// try_acquire_until(), release(n); each also takes a number of permits.
/// Its permits belong to nobody (any thread or process may release) and
/// never expire: a process that dies holding permits takes them with it
/// until someone adds them back (add_permits, set_permits); where a holder
/// may crash, use permit_semaphore. Thread-safe; the client must outlive
/// it. A wait ends with errc::canceled when its cancel token fires.
class counting_semaphore {
public:
  counting_semaphore() noexcept = default;
  /// The semaphore `name` on `c`. Does no I/O.
  counting_semaphore(client &c, std::string_view name) {
    const std::string n = detail::c_string(name, "semaphore name");
    detail::check(rlock_semaphore_new(&h_, c.native_handle(), n.c_str()));
  }
  ~counting_semaphore() { rlock_semaphore_free(h_); }
  counting_semaphore(counting_semaphore &&o) noexcept
      : h_(std::exchange(o.h_, nullptr)) {}
  counting_semaphore &operator=(counting_semaphore &&o) noexcept {
    if (this != &o)
      rlock_semaphore_free(std::exchange(h_, std::exchange(o.h_, nullptr)));
    return *this;
  }
  counting_semaphore(const counting_semaphore &) = delete;
  counting_semaphore &operator=(const counting_semaphore &) = delete;

  explicit operator bool() const noexcept { return h_ != nullptr; }
  rlock_semaphore *native_handle() const noexcept { return h_; }
  std::string_view name() const noexcept {
    return h_ ? rlock_semaphore_name(h_) : "";
  }

  /// Take `n` permits (1 to RLOCK_MAX_PERMITS), waiting as long as it
  /// takes.
  void acquire(std::int64_t n = 1) {
    detail::check(
        rlock_semaphore_acquire(h_, n, detail::wait_forever, nullptr));
  }
  /// One attempt: true when taken.
  bool try_acquire(std::int64_t n = 1) {
    return detail::acquired(rlock_semaphore_acquire(h_, n, 0, nullptr));
  }
  template <class Rep, class Period>
  bool try_acquire_for(std::chrono::duration<Rep, Period> wait,
                       std::int64_t n = 1) {
    return detail::acquired(
        rlock_semaphore_acquire(h_, n, detail::wait_ms(wait), nullptr));
  }
  template <class Clock, class Duration>
  bool try_acquire_until(std::chrono::time_point<Clock, Duration> t,
                         std::int64_t n = 1) {
    return detail::acquired(
        rlock_semaphore_acquire(h_, n, detail::wait_until_ms(t), nullptr));
  }
  /// Take `n` permits as `o` says (its wait and cancel token; no lease,
  /// owner or fencing token: errc::invalid for the last two).
  bool acquire(const acquire_options &o, std::int64_t n = 1) {
    const rlock_acquire_options c = detail::sync_options(o);
    return detail::acquired(
        rlock_semaphore_acquire(h_, n, c.wait_ms, c.cancel));
  }
  /// Give `n` permits back (anyone may) and wake waiters.
  void release(std::int64_t n = 1) {
    detail::check(rlock_semaphore_release(h_, n));
  }
  /// The permits available now (a round trip).
  std::int64_t available() {
    std::int64_t v = 0;
    detail::check(rlock_semaphore_available(&v, h_));
    return v;
  }
  /// Set the permits if none were ever set; true when set.
  bool try_set_permits(std::int64_t n) {
    int set = 0;
    detail::check(rlock_semaphore_try_set_permits(&set, h_, n));
    return set != 0;
  }
  void set_permits(std::int64_t n) {
    detail::check(rlock_semaphore_set_permits(h_, n));
  }
  /// Add `delta` permits (negative takes away).
  void add_permits(std::int64_t delta) {
    detail::check(rlock_semaphore_add_permits(h_, delta));
  }
  /// Take every available permit; returns how many there were.
  std::int64_t drain() {
    std::int64_t v = 0;
    detail::check(rlock_semaphore_drain(&v, h_));
    return v;
  }

private:
  rlock_semaphore *h_ = nullptr;
};

/// One permit of a permit_semaphore, owned RAII-style: the destructor
/// releases it (reporting nothing, as a guard's unlock()); release()
/// releases it checked. Moves; the permit_semaphore it came from must
/// outlive it. A default-constructed or moved-from permit owns nothing.
class permit {
public:
  permit() noexcept = default;
  ~permit() { reset(); }
  permit(permit &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {
    std::memcpy(id_, o.id_, sizeof id_);
  }
  permit &operator=(permit &&o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
      std::memcpy(id_, o.id_, sizeof id_);
    }
    return *this;
  }
  permit(const permit &) = delete;
  permit &operator=(const permit &) = delete;

  /// Whether it owns a permit.
  explicit operator bool() const noexcept { return h_ != nullptr; }
  /// The permit's id: RLOCK_PERMIT_ID_LEN hex digits ("" when empty).
  std::string_view id() const noexcept {
    return h_ ? std::string_view(id_) : std::string_view();
  }
  /// Release now, checked: throws lost_lock when it was lost (expired,
  /// released by someone else, the key deleted), connection_error, ...;
  /// owns nothing afterwards, thrown or not. errc::not_held when empty.
  void release() {
    rlock_psemaphore *h = std::exchange(h_, nullptr);
    if (h == nullptr)
      throw error(RLOCK_ENOTHELD, "rlock::permit owns no permit");
    detail::check(rlock_psemaphore_release(h, id_));
  }
  /// Whether it is still good, answered locally (rlock_psemaphore_check):
  /// returns when it is; throws lost_lock once lost.
  void check() const {
    detail::check(rlock_psemaphore_check(h_, h_ ? id_ : nullptr));
  }
  /// A fixed lease of `lease` from now (a watchdog permit is renewed no
  /// more); lost_lock when lost.
  template <class Rep, class Period>
  void update_lease(std::chrono::duration<Rep, Period> lease) {
    detail::check(rlock_psemaphore_update_lease(h_, h_ ? id_ : nullptr,
                                                detail::to_ms(lease)));
  }
  /// The lease left (a round trip); empty when no longer leased.
  std::optional<std::chrono::milliseconds> lease_left() const {
    std::int64_t ms = 0;
    const int rc = rlock_psemaphore_lease_ms(&ms, h_, h_ ? id_ : nullptr);
    if (rc == RLOCK_ENOTHELD)
      return std::nullopt;
    detail::check(rc);
    return std::chrono::milliseconds(ms);
  }
  /// Stop owning without releasing; returns the id ("" when empty).
  std::string dismiss() noexcept {
    std::string id(this->id());
    h_ = nullptr;
    return id;
  }

private:
  friend class permit_semaphore;
  permit(rlock_psemaphore *h, const char *id) noexcept : h_(h) {
    std::memcpy(id_, id, sizeof id_);
  }
  void reset() noexcept {
    if (h_ != nullptr)
      (void)rlock_psemaphore_release(std::exchange(h_, nullptr), id_);
  }
  rlock_psemaphore *h_ = nullptr;
  char id_[RLOCK_PERMIT_ID_LEN + 1] = {0};
};

/// A permit-expirable semaphore (rlock_psemaphore, Redisson's
/// RPermitExpirableSemaphore): each permit taken has an id and a lease,
/// and comes back by itself when its lease runs out. acquire() returns a
/// permit that releases itself when destroyed, taken with a fixed lease or
/// (by default) renewed by the client's watchdog until released, so a
/// crashed holder's permit comes back one watchdog timeout later. A permit
/// lost meanwhile is told as a lost lock is (the lost-lock callback,
/// permit::check() and permit::release() throwing lost_lock). Deadlines
/// are stamped with the wall clock, as Redisson does (rlock/semaphore.h:
/// clocks must agree to well within a lease). Thread-safe; the client
/// must outlive it, and it must outlive its permits.
class permit_semaphore {
public:
  permit_semaphore() noexcept = default;
  /// The semaphore `name` on `c`. Does no I/O.
  permit_semaphore(client &c, std::string_view name) {
    const std::string n = detail::c_string(name, "semaphore name");
    detail::check(rlock_psemaphore_new(&h_, c.native_handle(), n.c_str()));
  }
  ~permit_semaphore() { rlock_psemaphore_free(h_); }
  permit_semaphore(permit_semaphore &&o) noexcept
      : h_(std::exchange(o.h_, nullptr)) {}
  permit_semaphore &operator=(permit_semaphore &&o) noexcept {
    if (this != &o)
      rlock_psemaphore_free(std::exchange(h_, std::exchange(o.h_, nullptr)));
    return *this;
  }
  permit_semaphore(const permit_semaphore &) = delete;
  permit_semaphore &operator=(const permit_semaphore &) = delete;

  explicit operator bool() const noexcept { return h_ != nullptr; }
  rlock_psemaphore *native_handle() const noexcept { return h_; }
  std::string_view name() const noexcept {
    return h_ ? rlock_psemaphore_name(h_) : "";
  }

  /// Take a permit, waiting as long as it takes; renewed by the watchdog.
  permit acquire() { return must(take(detail::wait_forever, 0, nullptr)); }
  /// Take a permit with a fixed lease, waiting as long as it takes.
  template <class Rep, class Period>
  permit acquire(std::chrono::duration<Rep, Period> lease) {
    return must(take(detail::wait_forever, lease_ms(lease), nullptr));
  }
  /// Take a permit as `o` says (wait, lease, cancel token; no owner or
  /// fencing token): empty when none came within the wait.
  std::optional<permit> acquire(const acquire_options &o) {
    const rlock_acquire_options c = detail::sync_options(o);
    return take(c.wait_ms, c.lease_ms, c.cancel);
  }
  /// One attempt (watchdog lease).
  std::optional<permit> try_acquire() { return take(0, 0, nullptr); }
  template <class Rep, class Period>
  std::optional<permit> try_acquire_for(std::chrono::duration<Rep, Period> w) {
    return take(detail::wait_ms(w), 0, nullptr);
  }
  template <class Rep, class Period, class LRep, class LPeriod>
  std::optional<permit>
  try_acquire_for(std::chrono::duration<Rep, Period> w,
                  std::chrono::duration<LRep, LPeriod> lease) {
    return take(detail::wait_ms(w), lease_ms(lease), nullptr);
  }
  template <class Clock, class Duration>
  std::optional<permit>
  try_acquire_until(std::chrono::time_point<Clock, Duration> t) {
    return take(detail::wait_until_ms(t), 0, nullptr);
  }
  /// Release the permit `id` (any client's), checked as permit::release().
  void release(std::string_view id) {
    const std::string s = detail::c_string(id, "permit id");
    detail::check(rlock_psemaphore_release(h_, s.c_str()));
  }
  /// The available permits (expired ones given back first).
  std::int64_t available() { return value(rlock_psemaphore_available); }
  /// The total: available plus leased.
  std::int64_t permits() { return value(rlock_psemaphore_permits); }
  /// Set the permits if none were ever set; true when set.
  bool try_set_permits(std::int64_t n) {
    int set = 0;
    detail::check(rlock_psemaphore_try_set_permits(&set, h_, n));
    return set != 0;
  }
  /// Make the total (available plus leased) `n`.
  void set_permits(std::int64_t n) {
    detail::check(rlock_psemaphore_set_permits(h_, n));
  }
  /// Add `delta` available permits (negative takes away).
  void add_permits(std::int64_t delta) {
    detail::check(rlock_psemaphore_add_permits(h_, delta));
  }

private:
  // A lease in ms: a zero or negative one would mean the watchdog to the
  // C call, so it is refused here instead.
  template <class Rep, class Period>
  static std::int64_t lease_ms(std::chrono::duration<Rep, Period> d) {
    const std::int64_t ms = detail::to_ms(d);
    if (ms <= 0)
      throw error(RLOCK_EINVAL, "a permit's lease must be at least 1 ms (or "
                                "none: the watchdog)");
    return ms;
  }
  static permit must(std::optional<permit> p) {
    if (!p) // a wait for ever ends with a permit or an error
      throw error(RLOCK_ELOCKED, "no permit taken");
    return std::move(*p);
  }
  std::optional<permit> take(std::int64_t wait, std::int64_t lease,
                             rlock_cancel *cancel) {
    char id[RLOCK_PERMIT_ID_LEN + 1] = {0};
    if (!detail::acquired(
            rlock_psemaphore_acquire(id, h_, wait, lease, cancel)))
      return std::nullopt;
    return permit(h_, id);
  }
  std::int64_t value(int (*fn)(std::int64_t *, rlock_psemaphore *)) {
    std::int64_t v = 0;
    detail::check(fn(&v, h_));
    return v;
  }
  rlock_psemaphore *h_ = nullptr;
};

/// A count-down latch (rlock_latch, Redisson's RCountDownLatch), shaped
/// like std::latch: count_down(), wait(), try_wait(), arrive_and_wait(),
/// plus timed waits (wait_for, wait_until). Unlike std::latch its count
/// is set with try_set_count() (only when it has none), and once at zero
/// it can be set again. A latch never set counts zero. Thread-safe; the
/// client must outlive it.
class latch {
public:
  latch() noexcept = default;
  /// The latch `name` on `c`. Does no I/O.
  latch(client &c, std::string_view name) {
    const std::string n = detail::c_string(name, "latch name");
    detail::check(rlock_latch_new(&h_, c.native_handle(), n.c_str()));
  }
  ~latch() { rlock_latch_free(h_); }
  latch(latch &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  latch &operator=(latch &&o) noexcept {
    if (this != &o)
      rlock_latch_free(std::exchange(h_, std::exchange(o.h_, nullptr)));
    return *this;
  }
  latch(const latch &) = delete;
  latch &operator=(const latch &) = delete;

  explicit operator bool() const noexcept { return h_ != nullptr; }
  rlock_latch *native_handle() const noexcept { return h_; }
  std::string_view name() const noexcept {
    return h_ ? rlock_latch_name(h_) : "";
  }

  /// Set the count (1 to INT64_MAX) if the latch has none; true when set.
  bool try_set_count(std::int64_t n) {
    int set = 0;
    detail::check(rlock_latch_try_set_count(&set, h_, n));
    return set != 0;
  }
  /// Count down by one (Redisson counts down one at a time).
  void count_down() { detail::check(rlock_latch_count_down(h_)); }
  /// The count now (a round trip).
  std::int64_t count() {
    std::int64_t v = 0;
    detail::check(rlock_latch_count(&v, h_));
    return v;
  }
  /// Whether the count is zero (one look, no waiting).
  bool try_wait() { return reached(rlock_latch_await(h_, 0, nullptr)); }
  /// Wait as long as it takes for the count to reach zero.
  void wait() {
    detail::check(rlock_latch_await(h_, detail::wait_forever, nullptr));
  }
  /// Wait at most `d`: true when the count reached zero.
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> d) {
    return reached(rlock_latch_await(h_, detail::wait_ms(d), nullptr));
  }
  template <class Clock, class Duration>
  bool wait_until(std::chrono::time_point<Clock, Duration> t) {
    return reached(rlock_latch_await(h_, detail::wait_until_ms(t), nullptr));
  }
  /// Wait as `o` says (its wait and cancel token).
  bool wait(const acquire_options &o) {
    const rlock_acquire_options c = detail::sync_options(o);
    return reached(rlock_latch_await(h_, c.wait_ms, c.cancel));
  }
  /// count_down(), then wait().
  void arrive_and_wait() {
    count_down();
    wait();
  }
  /// Delete the latch whatever its count (its waiters return); true when
  /// there was one.
  bool remove() {
    int deleted = 0;
    detail::check(rlock_latch_delete(&deleted, h_));
    return deleted != 0;
  }

private:
  static bool reached(int rc) { return detail::acquired(rc); }
  rlock_latch *h_ = nullptr;
};

// ---- guards ----------------------------------------------------------------

/// Holds a Lockable (mutex, multilock, redlock, owned<...>,
/// read_write_lock) for a scope, like std::unique_lock, and can release it
/// checked: unlock() throws what release() throws (lost_lock above all),
/// where the destructor, which must not throw, cannot report. Moves.
///   rlock::guard g(orders, 10s);  // a 10 s lease
///   ...
///   g.unlock();                   // throws lost_lock if it ran out
template <class L> class guard {
public:
  /// Acquire, waiting as long as it takes (watchdog lease).
  explicit guard(L &l) : l_(&l) { l.lock(); }
  /// Acquire with a fixed lease.
  template <class Rep, class Period>
  guard(L &l, std::chrono::duration<Rep, Period> lease) : l_(&l) {
    l.lock(lease);
  }
  /// Acquire as `o` says; owns_lock() tells whether it did.
  guard(L &l, const acquire_options &o) : l_(l.acquire(o) ? &l : nullptr) {}
  /// Take over a hold already taken.
  guard(L &l, std::adopt_lock_t) noexcept : l_(&l) {}
  ~guard() {
    if (l_ != nullptr)
      l_->unlock();
  }
  guard(guard &&o) noexcept : l_(std::exchange(o.l_, nullptr)) {}
  guard &operator=(guard &&o) noexcept {
    if (this != &o) {
      if (l_ != nullptr)
        l_->unlock();
      l_ = std::exchange(o.l_, nullptr);
    }
    return *this;
  }
  guard(const guard &) = delete;
  guard &operator=(const guard &) = delete;

  bool owns_lock() const noexcept { return l_ != nullptr; }
  explicit operator bool() const noexcept { return owns_lock(); }
  /// Release now, checked: throws lost_lock, connection_error, ...; the
  /// guard owns nothing afterwards, thrown or not. errc::not_held when it
  /// owned nothing.
  void unlock() {
    L *l = std::exchange(l_, nullptr);
    if (l == nullptr)
      throw error(RLOCK_ENOTHELD, "rlock::guard owns no lock");
    l->release();
  }
  /// Stop owning, without releasing; returns what it held (or nullptr).
  L *dismiss() noexcept { return std::exchange(l_, nullptr); }

private:
  L *l_;
};

/// Who leads an election, read in one atomic step (election::observe).
struct leader {
  std::string owner;                ///< "<client id>:<owner number>"
  std::optional<std::string> value; ///< none: a holder that did not campaign
  std::int64_t term = 0;            ///< the fencing token (0: unknown)
  std::chrono::milliseconds ttl{0}; ///< lease left at the snapshot
};

namespace detail {
// A snapshot (borrowed) as a leader; std::nullopt when nobody leads.
inline std::optional<leader> leader_of(const rlock_leader *l) {
  if (!rlock_leader_present(l))
    return std::nullopt;
  leader out;
  out.owner = rlock_leader_owner(l);
  if (const char *v = rlock_leader_value(l))
    out.value = v;
  out.term = rlock_leader_term(l);
  out.ttl = std::chrono::milliseconds(rlock_leader_ttl_ms(l));
  return out;
}
} // namespace detail

/// A running election::watch() (rlock_election_watch_new): each change of
/// leader calls its function; destroying it (or stop()) ends that, waiting
/// for a call under way. Move-only; the election and its client must
/// outlive it.
class leader_watch {
public:
  /// Called with the leader (std::nullopt: nobody leads) on the client's
  /// loop thread (a blocking client's background thread): no blocking
  /// call of that client in it. An exception it throws is dropped.
  using on_change = std::function<void(const std::optional<leader> &)>;
  /// Called once per run of failed reads, with the status and message.
  using on_error = std::function<void(const error &)>;

  leader_watch() noexcept = default;
  ~leader_watch() { stop(); }
  leader_watch(leader_watch &&o) noexcept
      : h_(std::exchange(o.h_, nullptr)), s_(std::move(o.s_)) {}
  leader_watch &operator=(leader_watch &&o) noexcept {
    if (this != &o) {
      stop();
      h_ = std::exchange(o.h_, nullptr);
      s_ = std::move(o.s_);
    }
    return *this;
  }
  leader_watch(const leader_watch &) = delete;
  leader_watch &operator=(const leader_watch &) = delete;

  explicit operator bool() const noexcept { return h_ != nullptr; }
  /// Stop now (no call runs once it returns). Again: nothing.
  void stop() noexcept {
    rlock_election_watch_free(std::exchange(h_, nullptr));
    s_.reset();
  }

private:
  friend class election;
  struct state {
    on_change change;
    on_error failed;
  };
  static void told(void *arg, int rc, rlock_leader *l) noexcept {
    auto *s = static_cast<state *>(arg);
    std::unique_ptr<rlock_leader, void (*)(rlock_leader *)> hold(
        l, rlock_leader_free);
    try {
      if (rc == RLOCK_OK)
        s->change(detail::leader_of(l));
      else if (s->failed)
        s->failed(error(rc, detail::last_message(rc)));
    } catch (...) {
      // Nothing may cross into C.
    }
  }
  rlock_election_watch *h_ = nullptr;
  std::unique_ptr<state> s_;
};

/// A leader election on the fenced lock `name` (rlock/election.h):
/// campaign() waits until the owner leads and returns the term, the
/// fencing token of the winning acquisition; resign() gives it up;
/// observe() tells anyone who leads. Carries no per-owner state: many
/// threads may share one. Destroying it does not resign.
class election {
public:
  election() noexcept = default;
  /// An election object for `name` on `c` (a lock name's rules). No I/O.
  election(client &c, std::string_view name) {
    const std::string n = detail::c_string(name, "election name");
    detail::check(rlock_election_new(&h_, c.native_handle(), n.c_str()));
  }
  ~election() { rlock_election_free(h_); }
  election(election &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  election &operator=(election &&o) noexcept {
    if (this != &o)
      rlock_election_free(std::exchange(h_, std::exchange(o.h_, nullptr)));
    return *this;
  }
  election(const election &) = delete;
  election &operator=(const election &) = delete;

  explicit operator bool() const noexcept { return h_ != nullptr; }
  rlock_election *native_handle() const noexcept { return h_; }
  std::string_view name() const noexcept {
    return h_ ? rlock_election_name(h_) : "";
  }

  /// Campaign with `value` (1 to 65536 bytes, no NUL) as `o` says (its
  /// token() must not be set: the term is the answer): the term once
  /// leading, std::nullopt when another owner led for the whole wait.
  /// Throws rlock::error with errc::held when the owner leads already
  /// (and knows it: a lost hold still on the server is waited on),
  /// errc::invalid for a bad value (nothing written), canceled, ...
  std::optional<std::int64_t> campaign(std::string_view value,
                                       const acquire_options &o = {}) {
    const std::string v = detail::c_string(value, "leader value");
    rlock_acquire_options c = o.native();
    std::int64_t term = 0;
    if (!detail::acquired(
            rlock_election_campaign(handle(), v.c_str(), &c, &term)))
      return std::nullopt;
    return term;
  }
  /// Stop leading (the calling thread's campaign). Throws rlock::error
  /// with errc::not_held when not leading, lost_lock when it was lost.
  void resign() { detail::check(rlock_election_resign(handle(), 0)); }
  void resign(const owner &o) {
    detail::check(rlock_election_resign(handle(), o.checked_id()));
  }
  /// Returns while the calling thread (or `o`) leads, answered locally;
  /// throws lost_lock once leadership was lost, errc::not_held when it
  /// does not lead here.
  void check() { detail::check(rlock_election_check(handle(), 0)); }
  void check(const owner &o) {
    detail::check(rlock_election_check(handle(), o.checked_id()));
  }
  /// Who leads now, one round trip; std::nullopt when nobody does.
  std::optional<leader> observe() {
    rlock_leader *l = nullptr;
    detail::check(rlock_election_observe(&l, handle()));
    std::unique_ptr<rlock_leader, void (*)(rlock_leader *)> hold(
        l, rlock_leader_free);
    return detail::leader_of(l);
  }
  /// Follow who leads (rlock_election_watch_new): `fn` gets the leader now,
  /// then each change of leader (owner or term), read again at each
  /// message of the election's channel (and soon after it), at the
  /// lease's end and every `interval` (10 ms to a day); `failed`, if set,
  /// once per run of failed reads. Throws rlock::error (errc::invalid for
  /// an interval out of range, ...).
  template <class Rep = std::int64_t, class Period = std::milli>
  leader_watch
  watch(leader_watch::on_change fn,
        std::chrono::duration<Rep, Period> interval = std::chrono::seconds(1),
        leader_watch::on_error failed = {}) {
    if (!fn)
      throw error(RLOCK_EINVAL, "election::watch: no function");
    leader_watch w;
    w.s_ = std::make_unique<leader_watch::state>(
        leader_watch::state{std::move(fn), std::move(failed)});
    detail::check(rlock_election_watch_new(&w.h_, handle(),
                                           detail::to_ms(interval),
                                           &leader_watch::told, w.s_.get()));
    return w;
  }

private:
  rlock_election *handle() const {
    if (h_ == nullptr)
      detail::throw_empty("rlock::election");
    return h_;
  }
  rlock_election *h_ = nullptr;
};

} // namespace rlock

#endif // RLOCK_HPP
