/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * subproto.c - pub/sub steps both subscribers share (subproto.h).
 */
#include "subproto.h"

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
  if (r->elem[2]->type == RLOCK__R_STR)
    out->payload = r->elem[2]->str;
  if (out->kind == RLOCK__PUSH_MESSAGE && out->payload == NULL)
    out->kind = RLOCK__PUSH_OTHER;
}

int rlock__unlock_wakes_all(const char *payload) {
  return payload != NULL && strcmp(payload, "1") == 0;
}

int rlock__sub_error_moved(const rlock__reply *r) {
  return r->type == RLOCK__R_ERROR && strncmp(r->str, "MOVED ", 6) == 0;
}
