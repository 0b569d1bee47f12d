#ifndef CACHEFS_CFUSE3_SHIM_H
#define CACHEFS_CFUSE3_SHIM_H

/* 312 or later makes fuse_session_loop_mt a real function instead of a macro. */
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <sys/xattr.h>
#include <sys/file.h>
#include <sys/statvfs.h>

/* fuse_session_new becomes a macro in libfuse 3.17; passing sizeof from C keeps
   the call correct for whichever header this is built against. */
static inline struct fuse_session *cachefs_session_new(struct fuse_args *args,
        const struct fuse_lowlevel_ops *op, void *userdata) {
    return fuse_session_new(args, op, sizeof(*op), userdata);
}

#endif
