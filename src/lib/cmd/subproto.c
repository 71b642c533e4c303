/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * subproto.c - pub/sub steps both subscribers share (subproto.h).
 */
#include "subproto.h"

#include <stdlib.h>
#include <string.h>

rlock__node *rlock__sub_node(rlock__topo *t, int sharded, const char *channel) {
  return rlock__topo_lookup(t, sharded ? channel : NULL);
}

const char *rlock__sub_word(int sharded, int unsub) {
  static const char *const words[2][2] = {{"SUBSCRIBE", "UNSUBSCRIBE"},
                                          {"SSUBSCRIBE", "SUNSUBSCRIBE"}};
  return words[sharded != 0][unsub != 0];
}

/* The push's kind, sharded pub/sub's leading 's' aside. */
static rlock__push_kind kind_of(const rlock__reply *w) {
  static const struct {
    const char *word;
    rlock__push_kind kind;
  } kinds[] = {{"message", RLOCK__PUSH_MESSAGE},
               {"subscribe", RLOCK__PUSH_SUBSCRIBED},
               {"unsubscribe", RLOCK__PUSH_UNSUBSCRIBED}};
  const char *s = w->str;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strcmp(s, kinds[i].word) == 0 ||
        (s[0] == 's' && strcmp(s + 1, kinds[i].word) == 0))
      return kinds[i].kind;
  return RLOCK__PUSH_OTHER;
}

void rlock__push_read(const rlock__reply *r, rlock__push *out) {
  memset(out, 0, sizeof *out);
  if (r->type != RLOCK__R_ARRAY || r->n < 1 || r->elem[0]->type != RLOCK__R_STR)
    return;
  out->pong = rlock__reply_is(r->elem[0], "pong");
  if (r->n != 3 || r->elem[1]->type != RLOCK__R_STR)
    return;
  out->kind = kind_of(r->elem[0]);
  out->channel = r->elem[1]->str;
  out->chlen = r->elem[1]->len;
  if (r->elem[2]->type == RLOCK__R_STR) {
    out->payload = r->elem[2]->str;
    out->paylen = r->elem[2]->len;
  }
  if (out->kind == RLOCK__PUSH_MESSAGE && out->payload == NULL)
    out->kind = RLOCK__PUSH_OTHER;
}

/* One "$<len>\r\n<bytes>\r\n" at buf[*at], n bytes in all: 1 with *at past
 * it and its bytes in *str / *len, 0 if it is not one or is cut short. */
static int bulk_at(const char *buf, size_t n, size_t *at, const char **str,
                   size_t *len) {
  size_t i = *at, v = 0;
  if (i >= n || buf[i++] != '$')
    return 0;
  int digits = 0;
  for (; i < n && buf[i] >= '0' && buf[i] <= '9' && digits < 9; i++, digits++)
    v = v * 10 + (size_t)(buf[i] - '0');
  if (digits == 0 || n - i < 2 || buf[i] != '\r' || buf[i + 1] != '\n')
    return 0;
  i += 2;
  if (n - i < v + 2 || buf[i + v] != '\r' || buf[i + v + 1] != '\n')
    return 0;
  *str = buf + i;
  *len = v;
  *at = i + v + 2;
  return 1;
}

/* The length of one complete message push at buf's head, or 0. */
static size_t message_len(const char *buf, size_t n) {
  if (n < 4 || (buf[0] != '*' && buf[0] != '>') || memcmp(buf + 1, "3\r\n", 3))
    return 0;
  size_t at = 4, len;
  const char *word;
  if (!bulk_at(buf, n, &at, &word, &len) ||
      !((len == 7 && memcmp(word, "message", 7) == 0) ||
        (len == 8 && memcmp(word, "smessage", 8) == 0)))
    return 0;
  const char *skip;
  for (int k = 0; k < 2; k++)
    if (!bulk_at(buf, n, &at, &skip, &len))
      return 0;
  return at;
}

size_t rlock__push_messages_len(const char *buf, size_t n) {
  size_t total = 0, one;
  while ((one = message_len(buf + total, n - total)) > 0)
    total += one;
  return total;
}

int rlock__unlock_wakes_all(const char *payload) {
  return payload != NULL && strcmp(payload, "1") == 0;
}

static int has_prefix(const char *s, size_t n, const char *prefix) {
  size_t m = strlen(prefix);
  return n >= m && memcmp(s, prefix, m) == 0;
}

int64_t rlock__message_wakes(const char *channel, size_t chlen,
                             const char *payload) {
  if (payload == NULL)
    return 1;
  if (has_prefix(channel, chlen, "redisson_sc:")) {
    char *end;
    long long n = strtoll(payload, &end, 10);
    return end != payload && n > 0 ? (int64_t)n : 0;
  }
  if (has_prefix(channel, chlen, "redisson_countdownlatch__channel__"))
    return RLOCK__WAKE_ALL; /* "0", and "1": Redisson's delete sends it */
  return rlock__unlock_wakes_all(payload) ? RLOCK__WAKE_ALL : 1;
}

int rlock__sub_error_moved(const rlock__reply *r) {
  return r->type == RLOCK__R_ERROR && strncmp(r->str, "MOVED ", 6) == 0;
}
