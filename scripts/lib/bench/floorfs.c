/* floorfs: the floor under every FUSE row of scripts/bench, compiled by the bench (never
 * by the build). A libfuse low-level filesystem that does nothing a cache must do: FILES
 * read-only files of SIZE bytes named f0000000, f0000001, ... (BenchFiles' names) in its
 * root, their bytes in memory; OPEN and FLUSH answered ENOSYS once, so the kernel opens,
 * reads from its page cache and closes them alone, and the names and attributes are kept
 * for a day. What the kernel's FUSE path costs on top of that is all a row measured on it
 * shows: a rate no FUSE filesystem can beat on that machine.
 *
 *   floorfs SIZE FILES MOUNTPOINT [-f] [-o OPTIONS]   */
#define FUSE_USE_VERSION 34
#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static long file_size;
static long file_count;
static char *file_bytes;
static const double forever = 86400;

static void describe(fuse_ino_t ino, struct stat *st) {
    memset(st, 0, sizeof *st);
    st->st_ino = ino;
    if (ino == FUSE_ROOT_ID) {
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
    } else {
        st->st_mode = S_IFREG | 0444;
        st->st_nlink = 1;
        st->st_size = file_size;
    }
}

/* f%07ld -> inode 2 + the number; anything else is missing. */
static void floor_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
    char *end;
    long number = name[0] == 'f' ? strtol(name + 1, &end, 10) : -1;
    if (parent != FUSE_ROOT_ID || number < 0 || number >= file_count || *end || strlen(name) != 8) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    struct fuse_entry_param entry;
    memset(&entry, 0, sizeof entry);
    entry.ino = 2 + number;
    entry.attr_timeout = forever;
    entry.entry_timeout = forever;
    describe(entry.ino, &entry.attr);
    fuse_reply_entry(req, &entry);
}

static void floor_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    (void)fi;
    struct stat st;
    describe(ino, &st);
    fuse_reply_attr(req, &st, forever);
}

/* ENOSYS once: the kernel stops sending OPEN (and RELEASE), or FLUSH, for the connection. */
static void floor_declined(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    (void)ino;
    (void)fi;
    fuse_reply_err(req, ENOSYS);
}

static void floor_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, struct fuse_file_info *fi) {
    (void)ino;
    (void)fi;
    if (offset >= file_size) {
        fuse_reply_buf(req, NULL, 0);
        return;
    }
    if (offset + (off_t)size > file_size) size = file_size - offset;
    fuse_reply_buf(req, file_bytes + offset, size);
}

static const struct fuse_lowlevel_ops operations = {
    .lookup = floor_lookup, .getattr = floor_getattr, .open = floor_declined,
    .flush = floor_declined, .read = floor_read,
};

int main(int argc, char *argv[]) {
    if (argc < 4 || (file_size = atol(argv[1])) <= 0 || (file_count = atol(argv[2])) <= 0) {
        fprintf(stderr, "usage: floorfs SIZE FILES MOUNTPOINT [-f] [-o OPTIONS]\n");
        return 2;
    }
    file_bytes = malloc(file_size);
    if (!file_bytes) return 1;
    memset(file_bytes, 'x', file_size);
    argv[2] = argv[0];   /* libfuse parses the rest: program name, mountpoint, options */
    struct fuse_args args = FUSE_ARGS_INIT(argc - 2, argv + 2);
    struct fuse_cmdline_opts options;
    if (fuse_parse_cmdline(&args, &options) != 0 || !options.mountpoint) {
        fprintf(stderr, "floorfs: no mountpoint\n");
        return 2;
    }
    struct fuse_session *session = fuse_session_new(&args, &operations, sizeof operations, NULL);
    if (!session || fuse_set_signal_handlers(session) != 0 || fuse_session_mount(session, options.mountpoint) != 0)
        return 1;
    fuse_daemonize(options.foreground);
    struct fuse_loop_config *config = fuse_loop_cfg_create();
    int status = fuse_session_loop_mt(session, config);
    fuse_loop_cfg_destroy(config);
    fuse_session_unmount(session);
    fuse_remove_signal_handlers(session);
    fuse_session_destroy(session);
    free(options.mountpoint);
    fuse_opt_free_args(&args);
    return status ? 1 : 0;
}
