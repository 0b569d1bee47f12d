/* cachefs-bench-files: the per-file loops of scripts/bench, in C because a shell or
 * Python loop would cost more per file than a local stat does, and flatter the ratios.
 * Built by `swift build` (product cachefs-bench-files). */

/* files [-s FIRST] [-k STEP] [-p PREFIX] [-t TO] [-o OBJECTS] MODE DIR N SIZE
 *   MODE create|read|stat|unlink|mkdir|rmdir|rename: does it to N names in DIR,
 *   PREFIX%07ld (default prefix f) for FIRST, FIRST+STEP, ... (default 0, 1);
 *   create writes SIZE bytes, read opens the file read-only, reads SIZE bytes
 *   (it must get them all) and closes it, stat checks the size (SIZE -1: a directory),
 *   rename renames each name to TO%07ld (default prefix r). Prints seconds.
 *   unlink with -o OBJECTS (a cachefs store's objects directory, DIR being in
 *   its mount): notes each file's inode number (= entry id) first, untimed;
 *   after the unlinks waits until every OBJECTS/XX/ID is gone (the daemon
 *   removes bytes after its group commit) and prints a second figure, the
 *   seconds until then. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    static char buf[1 << 16];
    char name[64], to[64];
    long first = 0, step = 1;
    const char *prefix = "f", *target = "r", *objects = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "+s:k:p:t:o:")) != -1) {
        switch (opt) {
        case 'o': objects = optarg; break;
        case 's': first = atol(optarg); break;
        case 'k': step = atol(optarg); break;
        case 'p': prefix = optarg; break;
        case 't': target = optarg; break;
        default: return 2;
        }
    }
    if (argc - optind != 4 || step < 1 || first < 0) {
        fprintf(stderr, "usage: files [-s FIRST] [-k STEP] [-p PREFIX] [-t TO] "
                        "create|read|stat|unlink|mkdir|rmdir|rename DIR N SIZE\n");
        return 2;
    }
    const char *mode = argv[optind];
    long n = atol(argv[optind + 2]), size = atol(argv[optind + 3]);
    if (size < -1 || size > (long)sizeof buf) { fprintf(stderr, "bad size\n"); return 2; }
    memset(buf, 'x', sizeof buf);
    int dir = open(argv[optind + 1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) { perror(argv[optind + 1]); return 1; }
    enum { CREATE, READ, STAT, UNLINK, MKDIR, RMDIR, RENAME } op;
    if (!strcmp(mode, "create")) op = CREATE;
    else if (!strcmp(mode, "read")) op = READ;
    else if (!strcmp(mode, "stat")) op = STAT;
    else if (!strcmp(mode, "unlink")) op = UNLINK;
    else if (!strcmp(mode, "mkdir")) op = MKDIR;
    else if (!strcmp(mode, "rmdir")) op = RMDIR;
    else if (!strcmp(mode, "rename")) op = RENAME;
    else { fprintf(stderr, "unknown mode %s\n", mode); return 2; }

    unsigned long long *ids = NULL;
    int objdir = -1;
    if (objects) {
        if (op != UNLINK || n < 1) { fprintf(stderr, "-o is for unlink\n"); return 2; }
        objdir = open(objects, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (objdir < 0) { perror(objects); return 1; }
        ids = calloc(n, sizeof *ids);
        if (!ids) { perror("calloc"); return 1; }
        for (long i = 0, k = first; i < n; i++, k += step) {
            struct stat st;
            snprintf(name, sizeof name, "%s%07ld", prefix, k);
            if (fstatat(dir, name, &st, 0) != 0) { perror(name); return 1; }
            ids[i] = (unsigned long long)st.st_ino;
        }
    }

    double t0 = now();
    for (long i = 0, k = first; i < n; i++, k += step) {
        snprintf(name, sizeof name, "%s%07ld", prefix, k);
        switch (op) {
        case CREATE: {
            int fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (fd < 0) { perror(name); return 1; }
            if (size > 0 && write(fd, buf, size) != size) { perror("write"); return 1; }
            if (close(fd) != 0) { perror("close"); return 1; }
            break;
        }
        case READ: {
            int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
            if (fd < 0) { perror(name); return 1; }
            ssize_t got = size > 0 ? read(fd, buf, size) : 0;
            if (got != size) {
                if (got < 0) perror(name);
                else fprintf(stderr, "%s: read %zd bytes, expected %ld\n", name, got, size);
                return 1;
            }
            if (close(fd) != 0) { perror("close"); return 1; }
            break;
        }
        case STAT: {
            struct stat st;
            if (fstatat(dir, name, &st, 0) != 0) { perror(name); return 1; }
            if (size < 0 ? !S_ISDIR(st.st_mode) : st.st_size != size) {
                fprintf(stderr, "%s: size %lld, expected %ld\n", name, (long long)st.st_size, size);
                return 1;
            }
            break;
        }
        case UNLINK:
            if (unlinkat(dir, name, 0) != 0) { perror(name); return 1; }
            break;
        case MKDIR:
            if (mkdirat(dir, name, 0755) != 0) { perror(name); return 1; }
            break;
        case RMDIR:
            if (unlinkat(dir, name, AT_REMOVEDIR) != 0) { perror(name); return 1; }
            break;
        case RENAME:
            snprintf(to, sizeof to, "%s%07ld", target, k);
            if (renameat(dir, name, dir, to) != 0) { perror(name); return 1; }
            break;
        }
    }
    double t1 = now();
    if (objects) {
        for (long i = 0; i < n; i++) {
            snprintf(name, sizeof name, "%02llx/%llu", ids[i] & 0xff, ids[i]);
            for (;;) {
                if (faccessat(objdir, name, F_OK, 0) != 0) {
                    if (errno == ENOENT) break;
                    perror(name); return 1;
                }
                if (now() - t1 > 120) { fprintf(stderr, "%s/%s still there after 120 s\n", objects, name); return 1; }
                usleep(200);
            }
        }
        printf("%.6f %.6f\n", t1 - t0, now() - t0);
    } else {
        printf("%.6f\n", t1 - t0);
    }
    return 0;
}
