/* SPDX-License-Identifier: BSD-3-Clause */
/* A consumer of the event-loop adapters: makes a loop client on libuv
 * and one on libevent (no I/O: none connects), frees them, and prints
 * the version like app.c. */
#define _POSIX_C_SOURCE 200809L /* uv.h's pthread types, in strict C99 */
#include <rlock.h>
#include <rlock/event.h>
#include <rlock/uv.h>
#include <stdio.h>

int main(void) {
  uv_loop_t loop;
  struct event_base *base = event_base_new();
  rlock_client *a, *b;
  if (uv_loop_init(&loop) != 0 || base == NULL ||
      rlock_client_new_uv(&a, NULL, &loop) != RLOCK_OK ||
      rlock_client_new_event(&b, NULL, base) != RLOCK_OK) {
    fprintf(stderr, "%s\n", rlock_error_last()->message);
    return 1;
  }
  rlock_client_free(a);
  rlock_client_free(b);
  uv_run(&loop, UV_RUN_NOWAIT); /* the adapter's handles close */
  event_base_free(base);
  printf("rlock %s\n", rlock_version_string());
  return uv_loop_close(&loop) == 0 ? 0 : 1;
}
