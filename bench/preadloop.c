/*
 * preadloop: the reference "tool" of bench/run.py, a bare pread loop.
 *
 * Usage: preadloop FILE BS THREADS SECONDS [rand|seq]
 *
 * It is the practical ceiling for any psync load generator on this machine: THREADS
 * threads call pread(fd, buf, BS, offset) on FILE at random (or sequential) offsets as
 * fast as they can, so the IOPS it reaches are the kernel's cost of pread alone (syscall
 * + page-cache lookup + copy) plus a xorshift step. On purpose it does NO per-I/O timing
 * and records nothing (no latencies, no histograms, no per-op stats); it reads the clock
 * only once every 1024 reads (every 16 MiB for larger blocks, e.g. every 16 reads of
 * 1 MiB) to know when to stop. A real load generator (fio, ioscope) does more work per
 * I/O, so its IOPS ratio to this loop shows how much of the ceiling it reaches.
 *
 * Offsets, mode rand (the default): xorshift64 per thread (seeded differently), offset =
 * (x % (size / align)) * align, with align = BS for BS >= 512 and 1 otherwise, size = file
 * size - BS. Mode seq: every thread starts at offset 0 and reads BS after BS, back to 0
 * when the next block would pass the end of the file (as fio's and ioscope's sequential
 * reads do).
 * Each thread opens FILE itself, O_RDONLY (page cache, no O_DIRECT), as fio's jobs and
 * ioscope's workers do: threads sharing one open file contend on it in the kernel.
 *
 * Output on stdout, one JSON line:
 * {"iops": N, "ops": N, "seconds": S, "threads": T, "mode": "rand"|"seq"}
 * (iops = total ops / elapsed seconds). Errors go to stderr with exit status 1.
 *
 * Build: cc -O2 -pthread -o preadloop preadloop.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHECK_EVERY 1024          /* reads between two clock checks... */
#define CHECK_BYTES (16u << 20)   /* ...or fewer, so that at most 16 MiB are read between two */

struct worker {
    pthread_t tid;
    int fd;
    size_t bs;
    uint64_t slots;     /* size / align */
    uint64_t align;
    uint64_t seed;
    int seq;            /* 1: sequential offsets, 0: random */
    uint64_t fsize;     /* file size (seq mode wraps before it) */
    struct timespec deadline;
    uint64_t ops;       /* result */
    int err;            /* errno of a failed pread, or -1 for a short read; 0 if fine */
    off_t err_off;
    ssize_t err_ret;
} __attribute__((aligned(64)));

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double ts_sec(const struct timespec *t)
{
    return (double)t->tv_sec + (double)t->tv_nsec / 1e9;
}

static int past(const struct timespec *now, const struct timespec *deadline)
{
    return now->tv_sec > deadline->tv_sec ||
           (now->tv_sec == deadline->tv_sec && now->tv_nsec >= deadline->tv_nsec);
}

static void *run(void *arg)
{
    struct worker *w = arg;
    void *buf;
    if (posix_memalign(&buf, 4096, w->bs < 4096 ? 4096 : w->bs) != 0) {
        fprintf(stderr, "preadloop: cannot allocate a %zu-byte buffer\n", w->bs);
        w->err = ENOMEM;
        return NULL;
    }
    memset(buf, 0, w->bs);
    uint64_t x = w->seed, ops = 0, next = 0;
    int check_every = CHECK_BYTES / w->bs;
    if (check_every > CHECK_EVERY)
        check_every = CHECK_EVERY;
    if (check_every < 1)
        check_every = 1;
    for (;;) {
        for (int i = 0; i < check_every; i++) {
            off_t off;
            if (w->seq) {
                if (next + w->bs > w->fsize)
                    next = 0;
                off = (off_t)next;
                next += w->bs;
            } else {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                off = (off_t)((x % w->slots) * w->align);
            }
            ssize_t n = pread(w->fd, buf, w->bs, off);
            if (n != (ssize_t)w->bs) {
                w->err = n < 0 ? errno : -1;
                w->err_off = off;
                w->err_ret = n;
                w->ops = ops;
                free(buf);
                return NULL;
            }
            ops++;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (past(&now, &w->deadline))
            break;
    }
    w->ops = ops;
    free(buf);
    return NULL;
}

static long long parse_pos(const char *s, const char *what)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v <= 0) {
        fprintf(stderr, "preadloop: %s must be a positive integer, got '%s'\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: preadloop FILE BS THREADS SECONDS [rand|seq]\n");
        return 2;
    }
    int seq = 0;
    if (argc == 6) {
        if (strcmp(argv[5], "seq") == 0)
            seq = 1;
        else if (strcmp(argv[5], "rand") != 0) {
            fprintf(stderr, "preadloop: mode must be rand or seq, got '%s'\n", argv[5]);
            return 2;
        }
    }
    const char *path = argv[1];
    size_t bs = (size_t)parse_pos(argv[2], "BS");
    int threads = (int)parse_pos(argv[3], "THREADS");
    long long seconds = parse_pos(argv[4], "SECONDS");

    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        fprintf(stderr, "preadloop: open %s: %s\n", path, strerror(errno));
        return 1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        fprintf(stderr, "preadloop: fstat %s: %s\n", path, strerror(errno));
        return 1;
    }
    uint64_t align = bs >= 512 ? bs : 1;
    if ((uint64_t)st.st_size <= bs || ((uint64_t)st.st_size - bs) / align == 0) {
        fprintf(stderr, "preadloop: %s (%lld bytes) is too small for BS %zu\n", path, (long long)st.st_size, bs);
        return 1;
    }
    uint64_t slots = ((uint64_t)st.st_size - bs) / align;

    struct worker *w = calloc((size_t)threads, sizeof *w);
    if (!w) {
        fprintf(stderr, "preadloop: out of memory\n");
        return 1;
    }
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    uint64_t seed_state = (uint64_t)start.tv_nsec ^ ((uint64_t)start.tv_sec << 32) ^ ((uint64_t)getpid() << 16);
    struct timespec deadline = start;
    deadline.tv_sec += seconds;
    for (int i = 0; i < threads; i++) {
        w[i].fd = open(path, O_RDONLY);
        if (w[i].fd < 0) {
            fprintf(stderr, "preadloop: open %s: %s\n", path, strerror(errno));
            return 1;
        }
        w[i].bs = bs;
        w[i].slots = slots;
        w[i].align = align;
        w[i].seq = seq;
        w[i].fsize = (uint64_t)st.st_size;
        do
            w[i].seed = splitmix64(&seed_state); /* a different, non-zero seed per thread */
        while (w[i].seed == 0);
        w[i].deadline = deadline;
        int rc = pthread_create(&w[i].tid, NULL, run, &w[i]);
        if (rc != 0) {
            fprintf(stderr, "preadloop: pthread_create: %s\n", strerror(rc));
            return 1;
        }
    }
    uint64_t ops = 0;
    int failed = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(w[i].tid, NULL);
        close(w[i].fd);
        ops += w[i].ops;
        if (w[i].err) {
            failed = 1;
            if (w[i].err == ENOMEM && w[i].err_ret == 0)
                ; /* allocation failure, already reported */
            else if (w[i].err > 0)
                fprintf(stderr, "preadloop: thread %d: pread at offset %lld: %s\n", i,
                        (long long)w[i].err_off, strerror(w[i].err));
            else
                fprintf(stderr, "preadloop: thread %d: short pread at offset %lld: %zd of %zu bytes\n", i,
                        (long long)w[i].err_off, w[i].err_ret, bs);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    close(fd);
    free(w);
    if (failed)
        return 1;
    double elapsed = ts_sec(&end) - ts_sec(&start);
    printf("{\"iops\": %.1f, \"ops\": %" PRIu64 ", \"seconds\": %.6f, \"threads\": %d, \"mode\": \"%s\"}\n",
           (double)ops / elapsed, ops, elapsed, threads, seq ? "seq" : "rand");
    return 0;
}
