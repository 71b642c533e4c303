// SPDX-License-Identifier: BSD-3-Clause
// The consumer check's C++ program (tests/consumer/check.sh,
// scripts/deb.sh): built against an installed rlock.hpp as a user would.
// It prints the version, checks that the header and the library agree on
// it, and, given a URL, takes the lock "consumer:app:cpp" there through
// std::unique_lock, checks that the server says it is held, and releases
// it checked (rlock::guard::unlock throws what went wrong).
#include <rlock.hpp>

#include <cstdio>
#include <exception>

int main(int argc, char **argv) try {
  std::printf("rlock %s\n", rlock_version_string());
  if (rlock_version() != RLOCK_VERSION_HEX) {
    std::fprintf(stderr, "header %06x, library %06x\n",
                 static_cast<unsigned>(RLOCK_VERSION_HEX), rlock_version());
    return 1;
  }
  rlock::client client(argc > 1 ? argv[1] : "redis://127.0.0.1:6379");
  if (argc < 2)
    return 0; // a client connects on first use: nothing to talk to
  rlock::mutex lock(client, "consumer:app:cpp");
  rlock::guard<rlock::mutex> held(lock);
  if (!lock.is_held()) {
    std::fprintf(stderr, "acquired, but the server says it is not held\n");
    return 1;
  }
  held.unlock();
  return 0;
} catch (const std::exception &e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
