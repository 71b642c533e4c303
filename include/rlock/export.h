/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlock/export.h - symbol visibility and C++ linkage helpers.
 *
 * Every public declaration is marked RLOCK_EXTERN; the library is built
 * with -fvisibility=hidden so nothing else leaves the shared object.
 */
#ifndef RLOCK_EXPORT_H
#define RLOCK_EXPORT_H

#if defined(_WIN32)
#if defined(RLOCK_BUILDING)
#define RLOCK_EXTERN __declspec(dllexport)
#else
#define RLOCK_EXTERN __declspec(dllimport)
#endif
#elif defined(__GNUC__)
#define RLOCK_EXTERN __attribute__((visibility("default")))
#else
#define RLOCK_EXTERN
#endif

#ifdef __cplusplus
#define RLOCK_BEGIN_DECLS extern "C" {
#define RLOCK_END_DECLS }
#else
#define RLOCK_BEGIN_DECLS
#define RLOCK_END_DECLS
#endif

#endif /* RLOCK_EXPORT_H */
