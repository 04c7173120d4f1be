//! The compact encoding of `/heatmap` answers (`encoding=packed`, docs/api.md): the same
//! answer as the JSON form, but each series' cells as three base64 strings of unsigned
//! LEB128 varints instead of nested arrays of numbers. Per series, `lengths` has one
//! number per second (how many buckets are non-empty), `steps` one per cell (its bucket
//! index minus the previous cell's in the same second; the first is the index itself),
//! `counts` one per cell. Split this way each string is regular (steps are mostly 1), so
//! it compresses well; an hour-long heat map is a few MB before compression instead of
//! tens. The UI decodes it in assets/api.js (`unpackHeatmap`).

use crate::query::{self, Query};
use base64::Engine;
use ioscope_store::Results;
use serde::Serialize;

/// One series of a packed heat map.
#[derive(Serialize, Debug, PartialEq)]
pub struct PackedSeries {
    pub key: String,
    pub total: u64,
    pub lengths: String,
    pub steps: String,
    pub counts: String,
}

/// `GET /api/v1/runs/{id}/heatmap?encoding=packed`.
pub fn heatmap_packed(results: &Results, q: &Query) -> Result<query::HeatmapAnswer<PackedSeries>, query::QueryError> {
    let map = query::heat_map(results, q)?;
    Ok(query::heatmap_answer(results, q, map, Some("packed"), |series| {
        series.iter().map(|s| pack(&s.key, s.total, &s.columns)).collect()
    }))
}

/// Packs one series' columns: per second, (bucket index, count) pairs, ascending.
pub fn pack(key: &str, total: u64, columns: &[Vec<(u32, u64)>]) -> PackedSeries {
    let (mut lengths, mut steps, mut counts) = (Vec::new(), Vec::new(), Vec::new());
    for col in columns {
        varint(&mut lengths, col.len() as u64);
        let mut previous = 0u32;
        for &(bucket, count) in col {
            varint(&mut steps, u64::from(bucket.saturating_sub(previous)));
            varint(&mut counts, count);
            previous = bucket;
        }
    }
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    PackedSeries { key: key.to_string(), total, lengths: b64(&lengths), steps: b64(&steps), counts: b64(&counts) }
}

/// Unsigned LEB128: 7 bits a byte, lowest first, the high bit set on all but the last.
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference decoder of the format (the UI's is assets/api.js).
    fn unpack(s: &PackedSeries) -> Vec<Vec<(u32, u64)>> {
        let b = |t: &str| base64::engine::general_purpose::STANDARD.decode(t).unwrap();
        let read = |bytes: &[u8], at: &mut usize| {
            let (mut v, mut shift) = (0u64, 0);
            loop {
                let byte = bytes[*at];
                *at += 1;
                v |= u64::from(byte & 0x7f) << shift;
                if byte < 0x80 {
                    return v;
                }
                shift += 7;
            }
        };
        let (lengths, steps, counts) = (b(&s.lengths), b(&s.steps), b(&s.counts));
        let (mut li, mut si, mut ci) = (0, 0, 0);
        let mut columns = Vec::new();
        while li < lengths.len() {
            let n = read(&lengths, &mut li);
            let mut bucket = 0u32;
            let col = (0..n)
                .map(|_| {
                    bucket += read(&steps, &mut si) as u32;
                    (bucket, read(&counts, &mut ci))
                })
                .collect();
            columns.push(col);
        }
        columns
    }

    #[test]
    fn packed_columns_decode_to_the_same_cells_including_large_counts() {
        let columns =
            vec![vec![(0, 1), (1, 127), (2, 128), (40, 300_000)], vec![], vec![(7, u64::MAX), (1000, 1 << 40)]];
        let packed = pack("read", 42, &columns);
        assert_eq!(unpack(&packed), columns);
        assert_eq!((packed.key.as_str(), packed.total), ("read", 42));
    }
}
