//! Costs of the measurement layer, on the values a storage run produces.
//!
//! - `record/*`: one iteration records a stream of 4,096 values, so `thrpt` is records per
//!   second and `time / 4096` is ns per record. `OpRecorder::record` is what the core loop
//!   pays on every I/O (four atomic-histogram updates: latency, service time, size, offset),
//!   so it bounds how fast the null engine can go; the plain and single atomic histogram
//!   show where that time goes; `slot_writer` adds the slot's pick per I/O
//!   (`WorkerRecorder::at`, the sequence number the collector checks).
//! - `merge`, `encode_sparse`, `decode_sparse`: ns per call, per histogram, of what the
//!   collector and the store do for every second of a run.
//! - `worker_reader_take`: ns per once-a-second read of one worker (4 op kinds x 4
//!   histograms), the collector's per-worker cost.
//!
//! Value streams: latency about 1 µs with a 1 % tail up to ~100 µs, 4 KiB-aligned random
//! offsets over 1 GiB, a fixed 4 KiB size.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ioscope_metrics::recorder::AtomicHistogram;
use ioscope_metrics::{Histogram, OpRecorder, WorkerReader, WorkerRecorder};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Values per stream: enough to defeat branch prediction, small enough to stay in cache.
const N: usize = 4096;
const SIZE: u64 = 4096;

fn rng(state: &mut u64) -> u64 {
    // SplitMix64: deterministic and good enough for a benchmark's value stream.
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Latencies in ns: 800..1200 ns, and one in a hundred multiplied by 2..128.
fn latencies(n: usize, seed: u64) -> Vec<u64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            let base = 800 + rng(&mut s) % 400;
            if rng(&mut s) < u64::MAX / 100 {
                base << (1 + rng(&mut s) % 7)
            } else {
                base
            }
        })
        .collect()
}

/// Random 4 KiB-aligned offsets over 1 GiB.
fn offsets(n: usize, seed: u64) -> Vec<u64> {
    let mut s = seed;
    (0..n).map(|_| (rng(&mut s) % ((1 << 30) / SIZE)) * SIZE).collect()
}

/// A per-second latency histogram: one million I/Os.
fn second_of_latencies() -> Histogram {
    let mut h = Histogram::new();
    for _ in 0..(1_000_000 / N) {
        latencies(N, 1).iter().for_each(|v| h.record(*v));
    }
    h
}

fn record(c: &mut Criterion) {
    let (lat, svc, off) = (latencies(N, 1), latencies(N, 2), offsets(N, 3));
    let mut g = c.benchmark_group("record");
    g.throughput(Throughput::Elements(N as u64));
    let mut h = Histogram::new();
    g.bench_function("histogram", |b| b.iter(|| black_box(&lat).iter().for_each(|v| h.record(*v))));
    let a = AtomicHistogram::default();
    g.bench_function("atomic_histogram", |b| b.iter(|| black_box(&lat).iter().for_each(|v| a.record(*v))));
    let r = OpRecorder::default();
    g.bench_function("op_recorder", |b| {
        b.iter(|| {
            for i in 0..N {
                r.record(lat[i], svc[i], black_box(SIZE), off[i]);
            }
        })
    });
    // What the core loop pays per I/O: the slot's pick and its sequence number (two plain
    // stores) around the same four updates.
    let w = WorkerRecorder::new(1);
    w.start(0, u64::MAX);
    g.bench_function("slot_writer", |b| {
        b.iter(|| {
            for i in 0..N {
                w.at(black_box(i as u64)).op(0).record(lat[i], svc[i], black_box(SIZE), off[i]);
            }
        })
    });
    g.finish();
}

fn collector(c: &mut Criterion) {
    // Dense: values spread over 1 ns .. ~1 s, so most of the low and middle buckets are set.
    let dense = |seed| {
        let mut s = seed;
        let mut h = Histogram::new();
        (0..200_000).for_each(|_| h.record(rng(&mut s) >> (34 + rng(&mut s) % 30)));
        h
    };
    let (mut acc, other) = (dense(1), dense(2));
    c.bench_function("merge", |b| b.iter(|| acc.merge(black_box(&other))));

    let h = second_of_latencies();
    let blob = h.encode_sparse();
    c.bench_function("encode_sparse", |b| b.iter(|| black_box(&h).encode_sparse()));
    c.bench_function("decode_sparse", |b| {
        b.iter(|| Histogram::decode_sparse(black_box(&blob), h.sum(), h.min().unwrap(), h.max().unwrap()).unwrap())
    });

    // One worker, four op kinds (read, write, fsync, fdatasync) with a few hundred I/Os each
    // between reads. Only the take is timed; the recording in between is not.
    let w = WorkerRecorder::new(4);
    let mut reader = WorkerReader::new(4);
    let (lat, off) = (latencies(N, 4), offsets(N, 5));
    c.bench_function("worker_reader_take", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for i in 0..iters as usize {
                for op in 0..4 {
                    let at = (i * 256 + op * 64) % (N - 256);
                    (at..at + 256).for_each(|j| w.at(0).op(op).record(lat[j], lat[j], SIZE, off[j]));
                }
                let t = Instant::now();
                let out = reader.take(&w);
                timed += t.elapsed();
                black_box(out);
            }
            timed
        })
    });
}

criterion_group!(benches, record, collector);
criterion_main!(benches);
