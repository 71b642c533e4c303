/*
 * reply.c - freeing and reading typed replies.
 */
#include "reply.h"

#include <stdlib.h>
#include <string.h>

#include "common.h"

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

int rlock__reply_starts(const rlock__reply *r, const char *prefix) {
  return r->str != NULL && strncmp(r->str, prefix, strlen(prefix)) == 0;
}

int rlock__error_status(const char *where, const rlock__reply *err) {
  int code = RLOCK_ESERVER;
  /* Redis puts WRONGTYPE first; a script's error may follow "ERR ...". */
  if (strstr(err->str, "WRONGTYPE") != NULL)
    code = RLOCK_EWRONGTYPE;
  else if (rlock__reply_starts(err, "NOAUTH") ||
           rlock__reply_starts(err, "WRONGPASS") ||
           rlock__reply_starts(err, "NOPERM"))
    code = RLOCK_EAUTH;
  return rlock__err(code, "redis %s: %s", where, err->str);
}
