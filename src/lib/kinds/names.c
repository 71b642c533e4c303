/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * names.c - lock names and derived key/channel names.
 */
#include "names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "rlock/lock.h"

/* Redis Cluster's rule: the tag is what lies between the first '{' and
 * the first '}' after it, when that is non-empty. */
static int has_valid_tag(const char *name) {
  const char *open = strchr(name, '{');
  if (open == NULL) /* a lone '}' would become the derived keys' tag */
    return strchr(name, '}') == NULL;
  const char *close = strchr(open + 1, '}');
  return close != NULL && close > open + 1;
}

int rlock__name_check(const char *name, const char *what) {
  if (name == NULL)
    return rlock__err(RLOCK_EINVAL, "%s is NULL", what);
  size_t len = strnlen(name, RLOCK_MAX_NAME_LEN + 1);
  if (len == 0)
    return rlock__err(RLOCK_EINVAL, "%s is empty", what);
  if (len > RLOCK_MAX_NAME_LEN)
    return rlock__err(RLOCK_EINVAL, "%s is longer than %d bytes", what,
                      RLOCK_MAX_NAME_LEN);
  if (!has_valid_tag(name))
    return rlock__err(RLOCK_EINVAL,
                      "%s '%s' has '{' or '}' but no non-empty {tag}; its "
                      "derived keys would hash to another cluster slot",
                      what, name);
  return RLOCK_OK;
}

char *rlock__name_prefixed(const char *prefix, const char *name) {
  size_t len = strlen(prefix) + strlen(name) + 4;
  char *out = rlock__malloc(len);
  if (out == NULL)
    return NULL;
  if (strchr(name, '{') != NULL)
    snprintf(out, len, "%s:%s", prefix, name);
  else
    snprintf(out, len, "%s:{%s}", prefix, name);
  return out;
}

char *rlock__name_suffixed(const char *name, const char *suffix) {
  const char *form = strchr(name, '{') != NULL ? "%s%s" : "{%s}%s";
  size_t len = strlen(name) + strlen(suffix) + 3;
  char *out = rlock__malloc(len);
  if (out != NULL)
    snprintf(out, len, form, name, suffix);
  return out;
}

char *rlock__name_braced(const char *name) {
  return rlock__name_suffixed(name, "");
}

/* Whether the one-byte token at *pp (a byte, "\\x", '?' or a class)
 * matches `c`; *pp moves past it. */
static int glob_one(const char **pp, unsigned char c) {
  const char *p = *pp;
  int hit = 0;
  if (*p == '?') {
    hit = 1;
  } else if (*p == '[') {
    int negate = *++p == '^';
    p += negate;
    for (; *p != '\0' && *p != ']'; p++) {
      if (*p == '\\' && p[1] != '\0')
        hit |= (unsigned char)*++p == c;
      else if (p[1] == '-' && p[2] != '\0' && p[2] != ']') {
        unsigned char lo = (unsigned char)p[0], hi = (unsigned char)p[2];
        if (lo > hi) {
          unsigned char t = lo;
          lo = hi, hi = t;
        }
        hit |= c >= lo && c <= hi;
        p += 2;
      } else
        hit |= (unsigned char)*p == c;
    }
    hit ^= negate;
    if (*p == '\0')
      p--; /* an open class ends with the pattern */
  } else {
    if (*p == '\\' && p[1] != '\0')
      p++;
    hit = (unsigned char)*p == c;
  }
  *pp = p + 1;
  return hit;
}

/* Greedy with one resume point: the last '*' seen takes one more byte of
 * `s` each time what follows it fails, so the time is bounded by the
 * product of the lengths. */
int rlock__glob(const char *pattern, const char *s) {
  const char *p = pattern, *star = NULL, *resume = NULL;
  while (*s != '\0') {
    if (*p == '*') {
      while (*p == '*')
        p++;
      star = p;
      resume = s;
      continue;
    }
    const char *next = p;
    if (*p != '\0' && glob_one(&next, (unsigned char)*s)) {
      p = next;
      s++;
    } else if (star != NULL) {
      p = star;
      s = ++resume;
    } else {
      return 0;
    }
  }
  while (*p == '*')
    p++;
  return *p == '\0';
}
