/* Histograms aggregated in the kernel, in ioscope's log-linear bucket layout
 * (crates/metrics/src/histogram.rs): values below 256 exact, then 128 buckets per power
 * of two, 7,424 buckets in all. Bucket counters are atomic, in a hash map with one entry
 * per bucket (system calls) or per series and second (block I/O, whole histograms);
 * count, sum, min and max per series go to a per-CPU hash map (exact, no atomics). */
#ifndef IOSCOPE_HIST_BPF_H
#define IOSCOPE_HIST_BPF_H

#include "bucket.bpf.h"

#define NS_PER_SECOND 1000000000ULL

/* count, 128-bit sum (lo, hi) and min/max of one series in one second, on one CPU
 * (bpf/series.rs STAT_BYTES). */
struct stat_val {
    u64 count;
    u64 sum_lo;
    u64 sum_hi;
    u64 min;
    u64 max;
};

/* Counts one event where a map is full (index 0 of a per-CPU array of one u64). */
#define DROPPED_MAP(name)                                  \
    struct {                                               \
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);           \
        __uint(max_entries, 1);                            \
        __type(key, u32);                                  \
        __type(value, u64);                                \
    } name SEC(".maps")

static __always_inline void count_dropped(void *dropped)
{
    u32 zero = 0;
    u64 *d = bpf_map_lookup_elem(dropped, &zero);
    if (d)
        *d += 1;
}

/* Adds one to the bucket counter `key` of map `hist`; false when the map is full. */
static __always_inline bool hist_add(void *hist, const void *key)
{
    u64 *n = bpf_map_lookup_elem(hist, key);
    if (n) {
        __sync_fetch_and_add(n, 1);
        return true;
    }
    u64 one = 1;
    if (bpf_map_update_elem(hist, key, &one, BPF_NOEXIST) == 0)
        return true;
    /* Another CPU made it in between: add to theirs. */
    n = bpf_map_lookup_elem(hist, key);
    if (n) {
        __sync_fetch_and_add(n, 1);
        return true;
    }
    return false;
}

/* This CPU's entry of `key` in the per-CPU map `stats`, made (zeroed) if missing;
 * NULL when the map is full. */
static __always_inline void *stat_entry(void *stats, const void *key, const void *zeroed)
{
    void *s = bpf_map_lookup_elem(stats, key);
    if (s)
        return s;
    bpf_map_update_elem(stats, key, zeroed, BPF_NOEXIST); /* or another CPU just did */
    return bpf_map_lookup_elem(stats, key);
}

/* Adds `v` to one CPU's count/sum/min/max. */
static __always_inline void stat_add(struct stat_val *s, u64 v)
{
    /* Made on another CPU, this CPU's copy starts zeroed: empty until its first count. */
    if (s->count == 0 || v < s->min)
        s->min = v;
    if (s->count == 0 || v > s->max)
        s->max = v;
    s->count += 1;
    u64 lo = s->sum_lo + v;
    if (lo < v)
        s->sum_hi += 1;
    s->sum_lo = lo;
}

/* The run's second of a kernel time stamp (CLOCK_MONOTONIC ns), or -1 before time zero
 * or while it is not set (0). */
static __always_inline s64 run_second(u64 now_ns, u64 t0_ns)
{
    if (t0_ns == 0 || now_ns < t0_ns)
        return -1;
    return (s64)((now_ns - t0_ns) / NS_PER_SECOND);
}

#endif
