/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * names.h - lock name validation and the Redisson naming rules for the
 * keys and channels derived from a lock's name.
 */
#ifndef RLOCK_NAMES_H
#define RLOCK_NAMES_H

#include <stddef.h>

/* RLOCK_OK, or RLOCK_EINVAL with a message for a NULL, empty, oversized
 * name, or one containing '{' without a non-empty {tag} (its derived keys
 * would land in another Redis Cluster slot). `what` names the argument. */
int rlock__name_check(const char *name, const char *what);

/* Redisson's prefix form: "prefix:{name}", or "prefix:name" when name
 * already contains '{'. malloc'ed; NULL when out of memory. */
char *rlock__name_prefixed(const char *prefix, const char *name);

/* Redisson's base for a read-write lock's timeout keys: "{name}", or
 * the name itself when it already contains '{'. malloc'ed or NULL. */
char *rlock__name_braced(const char *name);

/* Redisson's suffixName: the braced base followed by `suffix`, e.g. a
 * permit-expirable semaphore's lease set "{name}:timeout". malloc'ed or
 * NULL. */
char *rlock__name_suffixed(const char *name, const char *suffix);

/* Whether `s` matches the glob `pattern` as Redis's SCAN MATCH and PUBSUB
 * CHANNELS match: '*' any run, '?' any one byte, "[abc]", "[^abc]" and
 * ranges "[a-z]", '\\' taking the next byte as it is (also inside a
 * class); case-sensitive; a class left open ends with the pattern. For
 * names found another way (a channel's, a lease set's) that must be
 * filtered as SCAN would have filtered them. */
int rlock__glob(const char *pattern, const char *s);

#endif /* RLOCK_NAMES_H */
