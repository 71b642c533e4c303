// SPDX-License-Identifier: BSD-3-Clause
// rlock from C++ (include/rlock.hpp): two distributed locks taken together
// with std::scoped_lock, which avoids deadlock as it does for std::mutex
// (std::lock's try-and-back-off), from two threads that name them in
// opposite orders; then how failures arrive: as exceptions derived from
// std::system_error, except a lock held elsewhere, which is `false`.
// Usage: cpp_basic [URL]   (default: $RLOCK_URL, else redis://127.0.0.1:6379)
#include <rlock.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;

int main(int argc, char **argv) try {
  const char *env = std::getenv("RLOCK_URL");
  const char *url = argc > 1      ? argv[1]
                    : env && *env ? env
                                  : "redis://127.0.0.1:6379";
  rlock::client client(url);
  rlock::mutex orders(client, "orders"), payments(client, "payments");

  {
    std::scoped_lock both(orders, payments); // waits for both, watchdog
    std::printf("holding 'orders' and 'payments'\n");
  } // both released here

  // Two threads, the locks named in opposite orders: no deadlock, and
  // never both inside at once.
  std::atomic<int> inside{0}, overlaps{0};
  auto work = [&](rlock::mutex &first, rlock::mutex &second) {
    for (int i = 0; i < 20; i++) {
      std::scoped_lock g(first, second);
      overlaps += inside.fetch_add(1) != 0;
      inside.fetch_sub(1);
    }
  };
  std::thread t1(work, std::ref(orders), std::ref(payments));
  std::thread t2(work, std::ref(payments), std::ref(orders));
  t1.join();
  t2.join();
  std::printf("2 threads x 20 rounds in opposite orders: no deadlock, "
              "%d overlaps\n",
              overlaps.load());

  // A lock held by someone else: try_lock* say false, nothing is thrown.
  rlock::owner someone; // an owner that is not this thread
  auto as_someone = orders.for_owner(someone);
  std::unique_lock<rlock::owned<rlock::mutex>> theirs(as_someone);
  std::unique_lock<rlock::mutex> mine(orders, 200ms); // waits 200 ms
  std::printf("while another owner holds 'orders', a 200 ms wait: %s\n",
              mine.owns_lock() ? "acquired (wrong!)" : "not acquired");
  theirs.unlock();

  // Failures are exceptions with an error code in rlock's category.
  bool caught = false;
  try {
    orders.release(); // this thread holds nothing
  } catch (const rlock::error &e) {
    caught = e.code() == rlock::errc::not_held;
    std::printf("release without holding: rlock::errc::not_held (%s)\n",
                e.message().c_str());
  }
  try {
    rlock::mutex bad(client, ""); // an empty name
  } catch (const std::system_error &e) {
    caught = caught && e.code() == rlock::errc::invalid;
    std::printf("an empty name: %s\n", e.what());
  }
  return caught && overlaps == 0 && !mine.owns_lock() ? 0 : 1;
} catch (const rlock::lost_lock &e) { // a held lock expired or was deleted
  std::fprintf(stderr, "lost: %s\n", e.what());
  return 1;
} catch (const std::exception &e) { // unreachable server, ...
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
