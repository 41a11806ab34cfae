/* A write-fault injector for the fault tests, loaded with LD_PRELOAD:
 *
 *   DS_FAIL_PATH=store.h5 DS_FAIL_ERRNO=ENOSPC LD_PRELOAD=libfail_writes.so downscale preprocess ...
 *
 * Counts the calls of write, pwrite, pwrite64, writev, fsync, fdatasync, close (and stdio's
 * fwrite, fflush, fclose, which glibc does not route through an interposable write) on files
 * whose path (read from /proc/self/fd/N) contains $DS_FAIL_PATH, and fails the call number
 * $DS_FAIL_AFTER (0, the default: the first) with $DS_FAIL_ERRNO (ENOSPC, the default, or EIO,
 * by name or number). Only that one call fails, as a single lost write that must not go
 * unnoticed; DS_FAIL_STICKY=1 fails every later call too, as a disk that stays full.
 * DS_FAIL_ON=fsync,close counts (and fails) only the calls named there.
 *
 * Real HDF5 (the sec2 driver's pwrite), netCDF-4 (HDF5 underneath), std::ofstream (write) and
 * cairo's PNG writer (stdio) all go through these calls. Each process counts for itself, so
 * fetch's worker processes each fail their own Nth call. A close that "fails" still releases
 * the descriptor, as Linux's close does. DS_FAIL_LOG=1 prints each injected failure to stderr. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static atomic_long calls;

static int fail_errno(void) {
  const char* e = getenv("DS_FAIL_ERRNO");
  if (!e || !*e || strcmp(e, "ENOSPC") == 0) return ENOSPC;
  if (strcmp(e, "EIO") == 0) return EIO;
  if (strcmp(e, "EDQUOT") == 0) return EDQUOT;
  const int n = atoi(e);
  return n > 0 ? n : ENOSPC;
}

/* The fd names a watched file (no allocation, no write: safe inside write itself). */
static int watched(int fd) {
  const char* want = getenv("DS_FAIL_PATH");
  if (!want || !*want || fd < 0) return 0;
  char link[64], target[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0) return 0;
  target[n] = '\0';
  return strstr(target, want) != NULL;
}

/* 1 if this call on fd is the one to fail (errno is then set). */
/* DS_FAIL_ON is unset or names `what` in its comma list. */
static int counted(const char* what) {
  const char* on = getenv("DS_FAIL_ON");
  if (!on || !*on) return 1;
  const size_t len = strlen(what);
  for (const char* p = on; (p = strstr(p, what)) != NULL; p += len)
    if ((p == on || p[-1] == ',') && (p[len] == ',' || p[len] == '\0')) return 1;
  return 0;
}

static int inject(int fd, const char* what) {
  if (!counted(what) || !watched(fd)) return 0;
  const char* after = getenv("DS_FAIL_AFTER");
  const long n = after && *after ? atol(after) : 0;
  const long i = atomic_fetch_add(&calls, 1);
  const char* sticky = getenv("DS_FAIL_STICKY");
  const int hit = i == n || (i > n && sticky && *sticky == '1');
  if (!hit) return 0;
  const int err = fail_errno();
  const char* log = getenv("DS_FAIL_LOG");
  if (log && *log == '1') {
    char msg[160];
    const int len = snprintf(msg, sizeof msg, "fail_writes: %s on fd %d (call %ld) -> %s\n", what, fd, i, strerror(err));
    static ssize_t (*real_write)(int, const void*, size_t);
    if (!real_write) real_write = (ssize_t(*)(int, const void*, size_t))dlsym(RTLD_NEXT, "write");
    if (len > 0) real_write(2, msg, (size_t)len);
  }
  errno = err;
  return 1;
}

#define REAL(ret, name, ...) \
  static ret (*real)(__VA_ARGS__); \
  if (!real) real = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, name)

ssize_t write(int fd, const void* buf, size_t count) {
  REAL(ssize_t, "write", int, const void*, size_t);
  if (inject(fd, "write")) return -1;
  return real(fd, buf, count);
}

ssize_t pwrite(int fd, const void* buf, size_t count, off_t off) {
  REAL(ssize_t, "pwrite", int, const void*, size_t, off_t);
  if (inject(fd, "pwrite")) return -1;
  return real(fd, buf, count, off);
}

ssize_t pwrite64(int fd, const void* buf, size_t count, off_t off) {
  REAL(ssize_t, "pwrite64", int, const void*, size_t, off_t);
  if (inject(fd, "pwrite64")) return -1;
  return real(fd, buf, count, off);
}

ssize_t writev(int fd, const struct iovec* iov, int n) {
  REAL(ssize_t, "writev", int, const struct iovec*, int);
  if (inject(fd, "writev")) return -1;
  return real(fd, iov, n);
}

int fsync(int fd) {
  REAL(int, "fsync", int);
  if (inject(fd, "fsync")) return -1;
  return real(fd);
}

int fdatasync(int fd) {
  REAL(int, "fdatasync", int);
  if (inject(fd, "fdatasync")) return -1;
  return real(fd);
}

int close(int fd) {
  REAL(int, "close", int);
  if (inject(fd, "close")) {
    const int saved = errno;
    real(fd);
    errno = saved;
    return -1;
  }
  return real(fd);
}

size_t fwrite(const void* p, size_t size, size_t n, FILE* f) {
  REAL(size_t, "fwrite", const void*, size_t, size_t, FILE*);
  if (inject(fileno(f), "fwrite")) return 0;
  return real(p, size, n, f);
}

int fflush(FILE* f) {
  REAL(int, "fflush", FILE*);
  if (f && inject(fileno(f), "fflush")) return EOF;
  return real(f);
}

int fclose(FILE* f) {
  REAL(int, "fclose", FILE*);
  if (inject(fileno(f), "fclose")) {
    const int saved = errno;
    real(f);
    errno = saved;
    return EOF;
  }
  return real(f);
}
