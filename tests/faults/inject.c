/* Fails system calls of an unmodified program (LD_PRELOAD), as libfiu's posix preload
 * does, but only calls on files in one folder and with a count, so that a test can fail
 * exactly the k-th call of a kind ("an I/O error at every call site") or each with a
 * seeded probability. Used by tests/faults/run.py; see docs/hostile-input.md.
 *
 * Environment:
 *   FAULT_DIR    the folder (absolute): calls on paths in it, relative paths when the
 *                working folder is in it, and on descriptors opened there, are eligible
 *   FAULT_KINDS  the kinds that may fail, comma-separated, of: open write fsync rename
 *                link close unlink mkdir (default: all)
 *   FAULT_NTH    fail the n-th eligible call of those kinds (from 1), and no other
 *   FAULT_RATE   or fail each with this probability (0 to 1), drawn from FAULT_SEED
 *   FAULT_ERRNO  the error: EIO (default), ENOSPC, EMFILE, ENFILE, EACCES, EPERM, or
 *                "mixed" (one of those drawn per failure, as fits the kind)
 *   FAULT_COUNT  a file the eligible calls of each kind are counted into at exit
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

enum kind { OPEN, WRITE, FSYNC, RENAME, LINK, CLOSE, UNLINK, MKDIR, KINDS };
static const char *kind_names[KINDS] = {"open", "write", "fsync", "rename",
                                        "link", "close", "unlink", "mkdir"};

#define MAX_FD 65536
static char watched_fd[MAX_FD];
static char dir[4096];
static size_t dir_len;
static int cwd_inside;
static int enabled[KINDS];
static long nth;
static double rate;
static uint64_t seed;
static const char *errno_name;
static const char *count_path;
static long eligible;
static long counts[KINDS];
static long failed_count;
static int ready;

static void setup(void) {
    if (ready)
        return;
    ready = 1;
    const char *d = getenv("FAULT_DIR");
    if (!d || !*d)
        return;
    snprintf(dir, sizeof dir, "%s", d);
    dir_len = strlen(dir);
    while (dir_len > 1 && dir[dir_len - 1] == '/')
        dir[--dir_len] = 0;
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd))
        cwd_inside = strncmp(cwd, dir, dir_len) == 0 && (cwd[dir_len] == 0 || cwd[dir_len] == '/');
    const char *kinds = getenv("FAULT_KINDS");
    for (int k = 0; k < KINDS; k++)
        enabled[k] = !kinds || strstr(kinds, kind_names[k]) != NULL;
    const char *n = getenv("FAULT_NTH");
    nth = n ? atol(n) : 0;
    const char *r = getenv("FAULT_RATE");
    rate = r ? atof(r) : 0.0;
    const char *s = getenv("FAULT_SEED");
    seed = s ? strtoull(s, NULL, 10) : 1;
    errno_name = getenv("FAULT_ERRNO");
    count_path = getenv("FAULT_COUNT");
}

static int inside(const char *path) {
    if (!path || !dir_len)
        return 0;
    if (path[0] != '/')
        return cwd_inside;
    return strncmp(path, dir, dir_len) == 0 && (path[dir_len] == 0 || path[dir_len] == '/');
}

static int watched(int fd) { return fd >= 0 && fd < MAX_FD && watched_fd[fd]; }

/* A path relative to a descriptor (the *at calls) is in the folder when the descriptor is. */
static int inside_at(int dirfd, const char *path) {
    return (dirfd != AT_FDCWD && path && path[0] != '/') ? watched(dirfd) : inside(path);
}

/* splitmix64 of the call's number: the same draws for the same seed. */
static double draw(long call) {
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + (uint64_t)call * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) / (double)(1ull << 53);
}

static int error_for(enum kind k, long call) {
    const char *e = errno_name;
    if (!e || !strcmp(e, "EIO"))
        return EIO;
    if (!strcmp(e, "ENOSPC"))
        return ENOSPC;
    if (!strcmp(e, "EMFILE"))
        return EMFILE;
    if (!strcmp(e, "ENFILE"))
        return ENFILE;
    if (!strcmp(e, "EACCES"))
        return EACCES;
    if (!strcmp(e, "EPERM"))
        return EPERM;
    /* mixed */
    int pick = (int)(draw(call + 7777) * 4);
    switch (k) {
    case OPEN: {
        static const int e_open[4] = {EIO, EMFILE, ENFILE, EACCES};
        return e_open[pick];
    }
    case WRITE: {
        static const int e_write[4] = {EIO, ENOSPC, EIO, ENOSPC};
        return e_write[pick];
    }
    case RENAME:
    case LINK:
    case UNLINK:
    case MKDIR: {
        static const int e_dir[4] = {EIO, EPERM, EACCES, ENOSPC};
        return e_dir[pick];
    }
    default:
        return EIO;
    }
}

/* Whether this eligible call of kind k fails; sets errno when it does. */
static int fail(enum kind k) {
    setup();
    __atomic_add_fetch(&eligible, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&counts[k], 1, __ATOMIC_RELAXED);
    if (!enabled[k])
        return 0;
    static long kind_calls;
    long this_call = __atomic_add_fetch(&kind_calls, 1, __ATOMIC_RELAXED);
    int yes = nth ? this_call == nth : (rate > 0 && draw(this_call) < rate);
    if (yes) {
        __atomic_add_fetch(&failed_count, 1, __ATOMIC_RELAXED);
        errno = error_for(k, this_call);
    }
    return yes;
}

#define REAL(name)                                                                             \
    static __typeof__(name) *real_##name;                                                      \
    if (!real_##name)                                                                          \
        real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name);

static void watch(int fd, int yes) {
    if (fd >= 0 && fd < MAX_FD)
        watched_fd[fd] = (char)yes;
}

static int open_common(int (*real)(), int dirfd, int at, const char *path, int flags,
                       mode_t mode) {
    setup();
    int in = at ? inside_at(dirfd, path) : inside(path);
    if (in && fail(OPEN))
        return -1;
    int fd = at ? real(dirfd, path, flags, mode) : real(path, flags, mode);
    watch(fd, in);
    return fd;
}

/* The mode argument open(2) takes only with O_CREAT or O_TMPFILE. */
#define MODE_AFTER(last)                                                                       \
    mode_t mode = 0;                                                                           \
    if (flags & (O_CREAT | __O_TMPFILE)) {                                                     \
        va_list ap;                                                                            \
        va_start(ap, last);                                                                    \
        mode = va_arg(ap, mode_t);                                                             \
        va_end(ap);                                                                            \
    }

#define OPEN_WRAPPER(name)                                                                     \
    int name(const char *path, int flags, ...) {                                               \
        MODE_AFTER(flags)                                                                      \
        REAL(name)                                                                             \
        return open_common((int (*)())real_##name, AT_FDCWD, 0, path, flags, mode);            \
    }
OPEN_WRAPPER(open)
OPEN_WRAPPER(open64)

#define OPENAT_WRAPPER(name)                                                                   \
    int name(int dirfd, const char *path, int flags, ...) {                                    \
        MODE_AFTER(flags)                                                                      \
        REAL(name)                                                                             \
        return open_common((int (*)())real_##name, dirfd, 1, path, flags, mode);               \
    }
OPENAT_WRAPPER(openat)
OPENAT_WRAPPER(openat64)

ssize_t write(int fd, const void *buf, size_t n) {
    REAL(write)
    if (watched(fd) && fail(WRITE))
        return -1;
    return real_write(fd, buf, n);
}

ssize_t writev(int fd, const struct iovec *iov, int n) {
    REAL(writev)
    if (watched(fd) && fail(WRITE))
        return -1;
    return real_writev(fd, iov, n);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t at) {
    REAL(pwrite64)
    if (watched(fd) && fail(WRITE))
        return -1;
    return real_pwrite64(fd, buf, n, at);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t at) {
    REAL(pwrite)
    if (watched(fd) && fail(WRITE))
        return -1;
    return real_pwrite(fd, buf, n, at);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int n, off_t at) {
    REAL(pwritev64)
    if (watched(fd) && fail(WRITE))
        return -1;
    return real_pwritev64(fd, iov, n, at);
}

int fsync(int fd) {
    REAL(fsync)
    if (watched(fd) && fail(FSYNC))
        return -1;
    return real_fsync(fd);
}

int fdatasync(int fd) {
    REAL(fdatasync)
    if (watched(fd) && fail(FSYNC))
        return -1;
    return real_fdatasync(fd);
}

int close(int fd) {
    REAL(close)
    int in = watched(fd);
    watch(fd, 0);
    if (in && fail(CLOSE)) {
        /* Linux closes the descriptor whatever close(2) reports. */
        int saved = errno;
        real_close(fd);
        errno = saved;
        return -1;
    }
    return real_close(fd);
}

int rename(const char *from, const char *to) {
    REAL(rename)
    setup();
    if ((inside(from) || inside(to)) && fail(RENAME))
        return -1;
    return real_rename(from, to);
}

int renameat(int fd1, const char *from, int fd2, const char *to) {
    REAL(renameat)
    setup();
    if ((inside(from) || inside(to)) && fail(RENAME))
        return -1;
    return real_renameat(fd1, from, fd2, to);
}

int renameat2(int fd1, const char *from, int fd2, const char *to, unsigned flags) {
    REAL(renameat2)
    setup();
    if ((inside(from) || inside(to)) && fail(RENAME))
        return -1;
    return real_renameat2(fd1, from, fd2, to, flags);
}

int link(const char *from, const char *to) {
    REAL(link)
    setup();
    if (inside(to) && fail(LINK))
        return -1;
    return real_link(from, to);
}

int linkat(int fd1, const char *from, int fd2, const char *to, int flags) {
    REAL(linkat)
    setup();
    if (inside(to) && fail(LINK))
        return -1;
    return real_linkat(fd1, from, fd2, to, flags);
}

int unlink(const char *path) {
    REAL(unlink)
    setup();
    if (inside(path) && fail(UNLINK))
        return -1;
    return real_unlink(path);
}

int unlinkat(int fd, const char *path, int flags) {
    REAL(unlinkat)
    setup();
    if (inside_at(fd, path) && fail(UNLINK))
        return -1;
    return real_unlinkat(fd, path, flags);
}

int rmdir(const char *path) {
    REAL(rmdir)
    setup();
    if (inside(path) && fail(UNLINK))
        return -1;
    return real_rmdir(path);
}

int mkdir(const char *path, mode_t mode) {
    REAL(mkdir)
    setup();
    if (inside(path) && fail(MKDIR))
        return -1;
    return real_mkdir(path, mode);
}

__attribute__((destructor)) static void report(void) {
    if (!count_path)
        return;
    FILE *f = fopen(count_path, "w");
    if (!f)
        return;
    for (int k = 0; k < KINDS; k++)
        fprintf(f, "%s %ld\n", kind_names[k], counts[k]);
    fprintf(f, "failed %ld\n", failed_count);
    fclose(f);
}
