// SPDX-License-Identifier: GPL-2.0
/* Block I/O per device and op, aggregated in the kernel per second of the run:
 * latency (ns), size (bytes) and offset (bytes) histograms. One program, at a request's
 * (final) block_rq_complete: the latency runs from the block layer's own time stamp of
 * the request (start_time_ns, taken when it was made, the one /proc/diskstats times
 * from) to the device's completion, and counts in the second the completion falls in.
 * Read by crates/probe/src/bpf/loader.rs.
 * Cost matters (it runs once per I/O): request fields are read directly (tp_btf), one
 * per-CPU entry holds the three statistics' totals and one entry their three
 * histograms (whole, 7,424 buckets each): a completion makes two map lookups (three for
 * a write that went through a flush sequence). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "hist.bpf.h"

/* The run's time zero (CLOCK_MONOTONIC ns), written by user space (the only variable
 * of .bss, bpf/loader.rs writes it whole); 0 until then: nothing is counted. */
u64 t0_ns = 0;

/* The op index user space names: read, write, discard, flush, other. */
enum { BLK_OP_READ, BLK_OP_WRITE, BLK_OP_DISCARD, BLK_OP_FLUSH, BLK_OP_OTHER };
/* The statistic of a bucket key: latency (ns), size (bytes), offset (bytes). */
enum { BLK_STAT_LATENCY, BLK_STAT_SIZE, BLK_STAT_OFFSET, BLK_STATS };

/* Must match Key in bpf/series.rs; both maps use stat 0 and bucket 0 (one entry per
 * second, device and op). */
struct blk_key {
    u32 second;
    u32 dev; /* major << 20 | minor, as the kernel's dev_t */
    u8 op;
    u8 stat;
    u16 bucket;
};

/* Latency, size and offset totals of one device and op, in that order. */
struct blk_stats {
    struct stat_val s[BLK_STATS];
};

/* Latency, size and offset bucket counters of one device and op, in that order. */
struct blk_hist {
    u64 n[BLK_STATS][BUCKETS];
};

/* 174 KiB an entry, preallocated: 64 entries (11 MiB) hold about 20 device-op pairs
 * over the 2-3 seconds not yet taken. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 64);
    __type(key, struct blk_key);
    /* By size, not type: the skeleton's Rust types cannot hold arrays this long. */
    __uint(value_size, sizeof(struct blk_hist));
} block_hist SEC(".maps");

/* One zeroed histogram entry, the value a new block_hist entry starts from. */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, u32);
    __uint(value_size, sizeof(struct blk_hist));
} block_hist_zero SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
    __uint(max_entries, 1024);
    __type(key, struct blk_key);
    __type(value, struct blk_stats);
} block_stats SEC(".maps");

DROPPED_MAP(block_dropped);

/* The size and offset of a request whose data went through a flush sequence (a write
 * with PREFLUSH or FUA on a device that needs them), by request address: it completes for
 * good, with no bytes left, only once its flushes have. Rare, so a hash map. */
struct flush_data {
    u64 offset_bytes;
    u64 size_bytes;
};
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 4096);
    __type(key, u64);
    __type(value, struct flush_data);
} block_flush_data SEC(".maps");

/* The request flags the block layer's accounting reads (blk_account_io_done): bit
 * numbers in enum rqf_flags since 6.10, fixed masks before. */
enum rqf_flags___ioscope { __RQF_FLUSH_SEQ___ioscope = 1, __RQF_IO_STAT___ioscope = 8 };

static __always_inline u32 rqf_flush_seq(void)
{
    if (bpf_core_enum_value_exists(enum rqf_flags___ioscope, __RQF_FLUSH_SEQ___ioscope))
        return 1U << (bpf_core_enum_value(enum rqf_flags___ioscope, __RQF_FLUSH_SEQ___ioscope) & 31);
    return 1U << 4;
}

static __always_inline u32 rqf_io_stat(void)
{
    if (bpf_core_enum_value_exists(enum rqf_flags___ioscope, __RQF_IO_STAT___ioscope))
        return 1U << (bpf_core_enum_value(enum rqf_flags___ioscope, __RQF_IO_STAT___ioscope) & 31);
    return 1U << 13;
}

const struct blk_stats zeroed_stats = {};

/* Before 5.16 the disk hung off the request itself. */
struct request___old {
    struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

static __always_inline u32 request_dev(struct request *rq)
{
    struct gendisk *disk;
    struct request___old *old = (void *)rq;
    if (bpf_core_field_exists(old->rq_disk))
        disk = BPF_CORE_READ(old, rq_disk);
    else
        disk = rq->q->disk;
    if (!disk)
        return 0;
    return ((u32)disk->major << 20) | ((u32)disk->first_minor & 0xfffff);
}

/* As /proc/diskstats groups them: odd ops write, flush and discard apart. */
static __always_inline u32 request_op(struct request *rq)
{
    u32 op = rq->cmd_flags & 0xff;
    if (op == 0)
        return BLK_OP_READ;
    if (op == 2)
        return BLK_OP_FLUSH;
    if (op == 3)
        return BLK_OP_DISCARD;
    if (op & 1)
        return BLK_OP_WRITE;
    return BLK_OP_OTHER;
}

/* Counts `v` in the bucket counter of statistic `stat` (atomic: CPUs share an entry). */
static __always_inline void bucket_add(struct blk_hist *h, u32 stat, u64 v)
{
    u32 b = bucket_index(v);
    /* The verifier cannot see that an index is below BUCKETS: it is checked on the very
     * register that indexes. */
    barrier_var(b);
    if (stat < BLK_STATS && b < BUCKETS)
        __sync_fetch_and_add(&h->n[stat][b], 1);
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(block_complete, struct request *rq, int error, unsigned int nr_bytes)
{
    /* Counted as /proc/diskstats counts: a request once, at its final completion, if the
     * device keeps I/O statistics; the flushes of a flush sequence on their own. */
    u32 flags = rq->rq_flags;
    u32 op = request_op(rq);
    u64 id = (u64)rq;
    if ((flags & rqf_flush_seq()) && op != BLK_OP_FLUSH) {
        /* The data step of a flush sequence: its bytes are known now, not at the end. */
        if (nr_bytes > 0) {
            struct flush_data d = { .offset_bytes = rq->__sector * 512, .size_bytes = nr_bytes };
            if (bpf_map_update_elem(&block_flush_data, &id, &d, BPF_ANY) != 0)
                count_dropped(&block_dropped);
        }
        return 0;
    }
    if (op != BLK_OP_FLUSH && !(flags & rqf_io_stat()))
        return 0;
    /* A partial completion leaves the rest of the request in flight. */
    if (nr_bytes < rq->__data_len)
        return 0;
    /* Stamped by the block layer when the device keeps I/O statistics (its queue/iostats,
     * on by default); without them neither diskstats nor this can time the request. */
    u64 start_ns = rq->start_time_ns;
    if (start_ns == 0)
        return 0;
    u64 now = bpf_ktime_get_ns();
    s64 second = run_second(now, t0_ns);
    if (second < 0 || second > 0xffffffffLL)
        return 0;
    u64 latency = now > start_ns ? now - start_ns : 0;
    u64 offset_bytes = rq->__sector * 512;
    u64 size_bytes = nr_bytes;
    if (nr_bytes == 0 && op != BLK_OP_FLUSH) {
        struct flush_data *d = bpf_map_lookup_elem(&block_flush_data, &id);
        if (d) {
            offset_bytes = d->offset_bytes;
            size_bytes = d->size_bytes;
            bpf_map_delete_elem(&block_flush_data, &id);
        }
    }
    struct blk_key key = { .second = (u32)second, .dev = request_dev(rq), .op = (u8)op };
    struct blk_stats *stats = stat_entry(&block_stats, &key, &zeroed_stats);
    bool ok = stats != NULL;
    if (stats) {
        stat_add(&stats->s[BLK_STAT_LATENCY], latency);
        stat_add(&stats->s[BLK_STAT_SIZE], size_bytes);
        stat_add(&stats->s[BLK_STAT_OFFSET], offset_bytes);
    }
    struct blk_hist *h = bpf_map_lookup_elem(&block_hist, &key);
    if (!h) {
        u32 zero = 0;
        void *zeroed = bpf_map_lookup_elem(&block_hist_zero, &zero);
        if (zeroed)
            bpf_map_update_elem(&block_hist, &key, zeroed, BPF_NOEXIST); /* or another CPU did */
        h = bpf_map_lookup_elem(&block_hist, &key);
    }
    if (h) {
        bucket_add(h, BLK_STAT_LATENCY, latency);
        bucket_add(h, BLK_STAT_SIZE, size_bytes);
        bucket_add(h, BLK_STAT_OFFSET, offset_bytes);
    }
    if (!ok || !h)
        count_dropped(&block_dropped);
    return 0;
}

char LICENSE[] SEC("license") = "GPL";
