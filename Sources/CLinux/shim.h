#ifndef CACHEFS_CLINUX_SHIM_H
#define CACHEFS_CLINUX_SHIM_H
/* Linux calls that Swift's Glibc module does not export: xattrs, statfs, syncfs, fallocate,
   malloc_trim, getrandom, preadv2's RWF_NOWAIT, O_DIRECT (hidden without _GNU_SOURCE). */
#include <malloc.h>
#include <sys/xattr.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <sys/types.h>
#include <linux/falloc.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <linux/fs.h>

#include <fcntl.h>

ssize_t preadv2(int fd, const struct iovec *iov, int iovcnt, off_t offset, int flags);
static const int cachefs_O_DIRECT = __O_DIRECT;

int syncfs(int fd);
int fallocate(int fd, int mode, off_t offset, off_t len);
int malloc_trim(size_t pad);

#endif
