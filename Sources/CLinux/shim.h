#ifndef CACHEFS_CLINUX_SHIM_H
#define CACHEFS_CLINUX_SHIM_H
/* Linux calls that Swift's Glibc module does not export: xattrs, statfs, syncfs, fallocate,
   malloc_trim, getrandom. */
#include <malloc.h>
#include <sys/xattr.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <sys/types.h>
#include <linux/falloc.h>
#include <sys/random.h>

int syncfs(int fd);
int fallocate(int fd, int mode, off_t offset, off_t len);
int malloc_trim(size_t pad);

#endif
