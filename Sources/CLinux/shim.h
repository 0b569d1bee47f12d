#ifndef CACHEFS_CLINUX_SHIM_H
#define CACHEFS_CLINUX_SHIM_H
/* Linux calls that Swift's Glibc module does not export: xattrs, statfs, syncfs. */
#include <sys/xattr.h>
#include <sys/vfs.h>
#include <unistd.h>

int syncfs(int fd);

#endif
