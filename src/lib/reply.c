/*
 * reply.c - freeing and reading typed replies.
 */
#include "reply.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* The calling thread's spare nodes, a list through their `elem` pointers.
 * A thread's first spare registers it with the key, whose destructor
 * frees the list when the thread exits (the main thread's, left at
 * exit(), stay reachable). */
static _Thread_local struct {
  rlock__reply *head;
  int n;
  int registered;
} spare;
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;
static int spare_key_ok;

static void spare_drop(void *arg) {
  (void)arg;
  while (spare.head != NULL) {
    rlock__reply *o = spare.head;
    spare.head = (rlock__reply *)o->elem;
    free(o);
  }
  spare.n = 0;
  spare.registered = 0;
}

static void spare_make_key(void) {
  spare_key_ok = pthread_key_create(&spare_key, spare_drop) == 0;
}

rlock__reply *rlock__reply_new(rlock__rtype type) {
  rlock__reply *o = spare.head;
  if (o != NULL) {
    spare.head = (rlock__reply *)o->elem;
    spare.n--;
    memset(o, 0, sizeof *o);
  } else if ((o = rlock__calloc(1, sizeof *o)) == NULL) {
    return NULL;
  }
  o->type = type;
  return o;
}

/* Keep `o` (its contents freed) as a spare, or free it. */
static void recycle(rlock__reply *o) {
  if (spare.n >= RLOCK__REPLY_SPARE) {
    free(o);
    return;
  }
  if (!spare.registered) {
    pthread_once(&spare_once, spare_make_key);
    if (!spare_key_ok || pthread_setspecific(spare_key, &spare) != 0) {
      free(o);
      return;
    }
    spare.registered = 1;
  }
  o->elem = (rlock__reply **)spare.head;
  spare.head = o;
  spare.n++;
}

void rlock__reply_free(rlock__reply *r) {
  if (r == NULL)
    return;
  for (size_t i = 0; i < r->n; i++)
    rlock__reply_free(r->elem[i]);
  free(r->elem);
  free(r->str);
  recycle(r);
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
