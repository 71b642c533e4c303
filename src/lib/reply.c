/*
 * reply.c - freeing and reading typed replies.
 */
#include "reply.h"

#include <stdlib.h>
#include <string.h>

void rlock__reply_free(rlock__reply *r) {
  if (r == NULL)
    return;
  for (size_t i = 0; i < r->n; i++)
    rlock__reply_free(r->elem[i]);
  free(r->elem);
  free(r->str);
  free(r);
}

int rlock__reply_is(const rlock__reply *r, const char *s) {
  return r != NULL && (r->type == RLOCK__R_STR || r->type == RLOCK__R_STATUS) &&
         r->len == strlen(s) && memcmp(r->str, s, r->len) == 0;
}

const char *rlock__reply_type_name(const rlock__reply *r) {
  static const char *const names[] = {"nil",    "integer", "string",
                                      "status", "error",   "array"};
  return r == NULL ? "none" : names[r->type];
}
