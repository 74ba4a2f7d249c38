/*
 * libacmlbm -- the files of the library's readers and writers (lib/base/file.c):
 * a reader opens only a regular file, never blocking, and reads no more than
 * the size it had when opened; a writer writes a temporary beside its path,
 * under a short name that always fits, and renames it over the path when
 * complete. SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_FILE_H
#define ACMLBM_FILE_H

#include <stdint.h> /* uint64_t */
#include <stdio.h>  /* FILE */

#include "acm_private.h"

ACM_BEGIN_DECLS

/* acm__file_open()'s answer for a file that opened but is no regular file. */
#define ACM_FILE_NOT_REGULAR (-1)

/* Open `path` to read it: O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, so that
 * a FIFO without a writer or a device does not block the open; fstat of the
 * descriptor (not of the path, which may change in between); anything but a
 * regular file refused; O_NONBLOCK cleared. On success 0, the descriptor in
 * *fd and the file's size, which bounds every read, in *size. On failure the
 * errno of the failing call (ENOENT, EACCES, ...) or ACM_FILE_NOT_REGULAR, and
 * the reason in why[n], to follow the path in a message: the system's ("No
 * such file or directory") or what the file is ("a FIFO, not a regular
 * file"). */
int acm__file_open(const char *path, int *fd, uint64_t *size, char *why, size_t n);

/* acm__file_open() as a stdio stream (binary, read-only); NULL on failure,
 * with *err and why[n] as acm__file_open() gives them. */
FILE *acm__file_fopen(const char *path, uint64_t *size, int *err, char *why, size_t n);

/* fgets() that stops at `size`, the size of the file when it was opened
 * (its reads bounded by it). */
char *acm__file_gets(char *line, int n, FILE *f, uint64_t size);

/* A name in the directory of `path` for its temporary (`.acm.tmp.<pid>.<n>`,
 * n counting the process's temporaries: no two threads or processes share
 * one, and it fits whatever the length of the file name); a path too long
 * for tmp[size] is ACM_ERR_IO with the message in error[n]. */
acm_status acm__temp_name(char *tmp, size_t size, const char *path, char *error, size_t n);

/* The temporary of `path` created, new (O_EXCL: never a file or link already
 * there) and empty: its name in tmp[size], its descriptor returned. -1 on
 * failure, errno set and the message, which names `path`, in error[n]. */
int acm__temp_create(char *tmp, size_t size, const char *path, char *error, size_t n);

/* acm__temp_create() as a stdio stream (binary); NULL on failure, errno set,
 * nothing left behind and the message in error[n]. */
FILE *acm__temp_fopen(char *tmp, size_t size, const char *path, char *error, size_t n);

/* The end of a write, the temporary flushed and closed with error e (0:
 * none): renamed over `path`, or removed, errno set and the reason, naming
 * `path`, in error[n]. */
acm_status acm__temp_finish(const char *tmp, const char *path, int e, char *error, size_t n);

ACM_END_DECLS

#endif /* ACMLBM_FILE_H */
