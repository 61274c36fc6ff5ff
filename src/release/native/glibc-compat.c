/*
 * stat, fstat, lstat and their 64 forms for glibc before 2.33, where they were inline wrappers
 * around __xstat and no library exported them (see glibc-compat.h). Linked into each native module
 * with hidden visibility: the module calls these, never an import. On x86_64 and aarch64 the
 * kernel's struct stat of newfstatat/fstat is glibc's struct stat and struct stat64 alike.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HIDDEN __attribute__((visibility("hidden")))

HIDDEN int stat64(const char *path, struct stat64 *buf) { return (int)syscall(SYS_newfstatat, AT_FDCWD, path, buf, 0); }
HIDDEN int lstat64(const char *path, struct stat64 *buf) { return (int)syscall(SYS_newfstatat, AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW); }
HIDDEN int fstat64(int fd, struct stat64 *buf) { return (int)syscall(SYS_fstat, fd, buf); }
HIDDEN int stat(const char *path, struct stat *buf) { return (int)syscall(SYS_newfstatat, AT_FDCWD, path, buf, 0); }
HIDDEN int lstat(const char *path, struct stat *buf) { return (int)syscall(SYS_newfstatat, AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW); }
HIDDEN int fstat(int fd, struct stat *buf) { return (int)syscall(SYS_fstat, fd, buf); }
