#ifndef CACHEFS_CLINUX_SHIM_H
#define CACHEFS_CLINUX_SHIM_H
/* Linux calls that Swift's Glibc module does not export: xattrs, statfs, syncfs, fallocate,
   malloc_trim, getrandom, preadv2 with RWF_NOWAIT, O_DIRECT (hidden without _GNU_SOURCE),
   prctl (variadic), posix_spawn_file_actions_addclosefrom_np (glibc 2.34), pipe2. */
#include <malloc.h>
#include <sys/xattr.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <sys/types.h>
#include <linux/falloc.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <sys/prctl.h>
#include <spawn.h>
#include <sys/inotify.h>

ssize_t preadv2(int fd, const struct iovec *iov, int iovcnt, off_t offset, int flags);
/* The kernel's values: <fcntl.h> and <linux/fs.h> would also bring names that Swift then
   finds twice (S_IFREG...). O_DIRECT differs by architecture. */
static const int cachefs_RWF_NOWAIT = 0x00000008;
#if defined(__aarch64__) || defined(__arm__)
static const int cachefs_O_DIRECT = 0200000;
#elif defined(__powerpc__)
static const int cachefs_O_DIRECT = 0400000;
#else
static const int cachefs_O_DIRECT = 040000;
#endif

int syncfs(int fd);
int pipe2(int pipefd[2], int flags);
int fallocate(int fd, int mode, off_t offset, off_t len);
int malloc_trim(size_t pad);
int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);

/* The connection guardian learns of the daemon's death by this signal: the kernel sends it when
   the thread that started the guardian (the daemon's main thread) exits. */
static inline int cachefs_set_parent_death_signal(int signal) {
    return prctl(PR_SET_PDEATHSIG, (unsigned long)signal, 0UL, 0UL, 0UL);
}

#endif
