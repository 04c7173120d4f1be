/* ioscope's log-linear bucket index (crates/metrics/src/histogram.rs bucket_index): values
 * below 256 exact, then 128 buckets per power of two. Plain C with no BPF helper, so a
 * test compiles it for the host and compares it with the Rust one. */
#ifndef IOSCOPE_BUCKET_BPF_H
#define IOSCOPE_BUCKET_BPF_H

#define GROUPING_POWER 7
/* Buckets covering all of u64: ((64 - GROUPING_POWER) << GROUPING_POWER) + 128. */
#define BUCKETS 7424

/* Index of the most significant set bit of v > 0, without a loop (the verifier then
 * sees straight-line code). */
static __always_inline u32 msb64(u64 v)
{
    u32 r = 0;
    if (v >> 32) { v >>= 32; r += 32; }
    if (v >> 16) { v >>= 16; r += 16; }
    if (v >> 8)  { v >>= 8;  r += 8; }
    if (v >> 4)  { v >>= 4;  r += 4; }
    if (v >> 2)  { v >>= 2;  r += 2; }
    if (v >> 1)  { r += 1; }
    return r;
}

/* Same as ioscope_metrics::histogram::bucket_index. */
static __always_inline u32 bucket_index(u64 v)
{
    if (v < (2 << GROUPING_POWER))
        return (u32)v;
    u32 shift = msb64(v) - GROUPING_POWER;
    return (u32)(((u64)shift << GROUPING_POWER) + (v >> shift));
}

#endif
