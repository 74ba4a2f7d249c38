/*
 * libacmlbm -- the files of the library's readers and writers (file.h).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>     /* errno, EEXIST, EINTR, ENAMETOOLONG */
#include <fcntl.h>     /* open, fcntl, O_* */
#include <stdatomic.h> /* the temporaries' counter */
#include <stdio.h>     /* FILE, fdopen, fgets, ftello, rename, remove */
#include <string.h>    /* strerror_r, strlen, strrchr */
#include <sys/stat.h>  /* fstat, S_IS* */
#include <unistd.h>    /* close, getpid */

#include "file.h"

/* Names tried for a temporary before giving up: another one is taken only
 * when one is left over from a process that had the same pid. */
#define ACM_TEMP_ATTEMPTS 64

/* strerror_r (POSIX): strerror may share one buffer between threads. */
static void reason(int err, char *why, size_t n)
{
    if (n > 0 && strerror_r(err, why, n) != 0)
        acm__format(why, n, "error %d", err);
}

/* "cannot <what> <path>: <the reason of errno e>" into error[n]. */
static void path_error(char *error, size_t n, const char *what, const char *path, int e)
{
    char why[160];
    reason(e, why, sizeof why);
    acm__format(error, n, "cannot %s %s: %s", what, path, why);
}

/* What a file that is not a regular file is, for messages. */
static const char *kind(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "of an unknown type";
}

int acm__file_open(const char *path, int *fd, uint64_t *size, char *why, size_t n)
{
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (f < 0) {
        const int e = errno;
        reason(e, why, n);
        return e;
    }
    struct stat sb;
    int e = 0, flags = 0;
    if (fstat(f, &sb) != 0 || (flags = fcntl(f, F_GETFL)) < 0) {
        e = errno;
        reason(e, why, n);
    } else if (!S_ISREG(sb.st_mode)) {
        e = ACM_FILE_NOT_REGULAR;
        acm__format(why, n, "%s, not a regular file", kind(sb.st_mode));
    } else if (fcntl(f, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        e = errno;
        reason(e, why, n);
    }
    if (e != 0) {
        close(f);
        return e;
    }
    *fd = f;
    *size = (uint64_t)sb.st_size;
    return 0;
}

FILE *acm__file_fopen(const char *path, uint64_t *size, int *err, char *why, size_t n)
{
    int fd = -1;
    *err = acm__file_open(path, &fd, size, why, n);
    if (*err != 0)
        return NULL;
    FILE *f = fdopen(fd, "rb");
    if (f == NULL) {
        *err = errno;
        reason(*err, why, n);
        close(fd);
    }
    return f;
}

char *acm__file_gets(char *line, int n, FILE *f, uint64_t size)
{
    const off_t at = ftello(f);
    if (at < 0 || (uint64_t)at >= size)
        return NULL;
    const uint64_t left = size - (uint64_t)at;
    if (left < (uint64_t)n - 1)
        n = (int)left + 1; /* fgets reads at most n - 1 bytes */
    return fgets(line, n, f);
}

/* ---- temporaries ---------------------------------------------------------------------- */

static atomic_ulong temp_counter;

acm_status acm__temp_name(char *tmp, size_t size, const char *path, char *error, size_t n)
{
    const char *slash = strrchr(path, '/');
    const size_t dir = slash != NULL ? (size_t)(slash - path) + 1 : 0;
    /* ".acm.tmp." and two numbers of at most 20 digits each, and the NUL */
    if (strlen(path) >= size || dir + 9 + 20 + 1 + 20 + 1 > size) {
        acm__format(error, n, "path of %zu characters is too long", strlen(path));
        return ACM_ERR_IO;
    }
    const unsigned long k = atomic_fetch_add_explicit(&temp_counter, 1, memory_order_relaxed);
    acm__format(tmp, size, "%.*s.acm.tmp.%ld.%lu", (int)dir, path, (long)getpid(), k);
    return ACM_OK;
}

int acm__temp_create(char *tmp, size_t size, const char *path, char *error, size_t n)
{
    for (int attempt = 0; attempt < ACM_TEMP_ATTEMPTS; ++attempt) {
        if (acm__temp_name(tmp, size, path, error, n) != ACM_OK) {
            errno = ENAMETOOLONG;
            return -1;
        }
        const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST)
            break;
    }
    const int e = errno;
    path_error(error, n, "create", path, e);
    errno = e;
    return -1;
}

FILE *acm__temp_fopen(char *tmp, size_t size, const char *path, char *error, size_t n)
{
    const int fd = acm__temp_create(tmp, size, path, error, n);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "wb");
    if (f == NULL) {
        const int e = errno;
        path_error(error, n, "create", path, e);
        close(fd);
        remove(tmp);
        errno = e;
    }
    return f;
}

acm_status acm__temp_finish(const char *tmp, const char *path, int e, char *error, size_t n)
{
    if (e == 0 && rename(tmp, path) != 0)
        e = errno;
    if (e == 0)
        return ACM_OK;
    path_error(error, n, "write", path, e);
    remove(tmp);
    errno = e;
    return ACM_ERR_IO;
}
