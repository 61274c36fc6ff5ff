/*
 * Included first in every file of the native modules the package builds (gcc -include): binds
 * the glibc functions whose default version is newer than 2.28 (RHEL 8's glibc, the oldest the
 * package runs on) to their older version, which every glibc since keeps for old programs. The
 * build host's glibc is newer (Debian 12: 2.36): without this, libm's log/exp/pow take 2.29,
 * pthread and dl* 2.34 (merged into libc.so.6). stat64/fstat64/lstat64 have no older version
 * (before 2.33 they were inline wrappers): glibc-compat.c defines them. The package test
 * reads every ELF file's version needs (test/package-elf.test.ts), so a symbol added here too
 * late, or a new one a future compiler brings, fails there, not on a node.
 */
#ifndef L9GPU_GLIBC_COMPAT_H
#define L9GPU_GLIBC_COMPAT_H
#if defined(__x86_64__)
#define L9GPU_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define L9GPU_GLIBC_BASE "GLIBC_2.17"
#else
#error "no glibc base version known for this architecture: add it to glibc-compat.h"
#endif
#define L9GPU_OLD(name) __asm__(".symver " #name "," #name "@" L9GPU_GLIBC_BASE);
/* libm: new versions in 2.29 (faster implementations, same results for finite input) */
L9GPU_OLD(exp) L9GPU_OLD(log) L9GPU_OLD(log2) L9GPU_OLD(pow)
/* libpthread and libdl, in libc.so.6 since 2.34 under new versions; node itself links both libraries */
L9GPU_OLD(pthread_create) L9GPU_OLD(pthread_join) L9GPU_OLD(pthread_once)
L9GPU_OLD(pthread_mutex_trylock) L9GPU_OLD(pthread_mutexattr_init) L9GPU_OLD(pthread_mutexattr_settype)
L9GPU_OLD(pthread_mutexattr_destroy) L9GPU_OLD(pthread_key_create) L9GPU_OLD(pthread_key_delete)
L9GPU_OLD(pthread_getspecific) L9GPU_OLD(pthread_setspecific) L9GPU_OLD(pthread_detach)
L9GPU_OLD(dlopen) L9GPU_OLD(dlsym) L9GPU_OLD(dlclose) L9GPU_OLD(dlerror)
#undef L9GPU_OLD
#endif
