// histo.js: heat-map shaping. Turns a /heatmap response (per second, per series, the
// non-empty log-linear buckets) into what a canvas needs: the value range of the y axis
// (with outlier elimination and vertical zoom), each bucket's pixel rows on a log scale,
// seconds summed into pixel columns, and the counts per cell. Also the side-panel numbers:
// totals per breakdown value and the bucket ranges under the cursor. Pure: no DOM.

// Shares of the visible I/O that outlier elimination can drop from the top of the y range.
export const OUTLIER_CUTS = [0, 5, 1, 0.1, 0.01];

// Normalise a heatmap response: bucket bounds as typed arrays (value ranges [lo, hi]).
export function prepareHeat(resp) {
  const nb = resp.buckets.length;
  const lo = new Float64Array(nb);
  const hi = new Float64Array(nb);
  for (let b = 0; b < nb; b++) {
    lo[b] = resp.buckets[b][0];
    hi[b] = resp.buckets[b][1];
  }
  return {
    stat: resp.stat,
    unit: resp.unit,
    by: resp.by || '',
    where: resp.where || '',
    relErr: resp.relative_error,
    // Seconds per column: 1, or N when the answer merged N seconds into each column
    // (then `seconds` holds each column's first second).
    columnSeconds: resp.column_seconds > 1 ? resp.column_seconds : 1,
    seconds: resp.seconds.slice(),
    buckets: resp.buckets,
    lo,
    hi,
    series: resp.series.map((s) => ({ key: String(s.key), total: s.total, columns: s.columns })),
  };
}

// Indices [i0, i1) of the seconds within [from, to] (seconds ascending).
export function indexRange(seconds, from, to) {
  const lower = (x) => {
    let a = 0;
    let b = seconds.length;
    while (a < b) {
      const m = (a + b) >> 1;
      if (seconds[m] < x) a = m + 1;
      else b = m;
    }
    return a;
  };
  return [lower(from), lower(to + 1)];
}

function wanted(keys, key) {
  return !keys || keys.has(key);
}

// Count per bucket over seconds [i0, i1) of the series whose key is in `keys` (null: all).
export function bucketCounts(heat, keys, i0, i1) {
  const counts = new Float64Array(heat.lo.length);
  for (const s of heat.series) {
    if (!wanted(keys, s.key)) continue;
    for (let i = i0; i < i1; i++) {
      const col = s.columns[i];
      if (!col) continue;
      for (let j = 0; j + 1 < col.length; j += 2) counts[col[j]] += col[j + 1];
    }
  }
  return counts;
}

// The top of the y range after eliminating the top `pct` percent of the I/O: the upper
// bound (exclusive) of the bucket in which the cumulative count from the bottom reaches
// (100 - pct)% of the total. pct 0 keeps everything (the highest non-empty bucket).
// Returns null when there is nothing to show.
export function cutValue(counts, hi, pct) {
  let total = 0;
  let top = -1;
  for (let b = 0; b < counts.length; b++) {
    if (counts[b] > 0) {
      total += counts[b];
      top = b;
    }
  }
  if (top < 0) return null;
  if (!(pct > 0)) return hi[top] + 1;
  const keep = total * (1 - pct / 100);
  let cum = 0;
  for (let b = 0; b <= top; b++) {
    cum += counts[b];
    if (cum >= keep - total * 1e-12) return hi[b] + 1;
  }
  return hi[top] + 1;
}

// Lowest value with a count (at least 1: a log axis cannot start at 0).
export function floorValue(counts, lo) {
  for (let b = 0; b < counts.length; b++) {
    if (counts[b] > 0) return Math.max(1, lo[b]);
  }
  return null;
}

// Round down / up to a tick a reader expects: powers of two for bytes, 1-2-5 otherwise.
export function niceDown(v, unit) {
  if (!(v > 0)) return 1;
  if (unit === 'bytes') return 2 ** Math.floor(Math.log2(v) + 1e-9);
  const e = 10 ** Math.floor(Math.log10(v) + 1e-9);
  for (const m of [5, 2, 1]) if (m * e <= v * (1 + 1e-9)) return m * e;
  return e;
}

export function niceUp(v, unit) {
  if (!(v > 0)) return 1;
  if (unit === 'bytes') return 2 ** Math.ceil(Math.log2(v) - 1e-9);
  const e = 10 ** Math.floor(Math.log10(v) - 1e-9);
  for (const m of [1, 2, 5, 10]) if (m * e >= v * (1 - 1e-9)) return m * e;
  return 10 * e;
}

// The smallest span a vertical zoom reaches: a log axis spans at least 10% (a dozen fine
// buckets), a linear one at least 1/4096 of its bounds and 8 units.
export const MIN_LOG_RATIO = 1.1;
const MIN_LIN_SHARE = 1 / 4096;

// The values a heat map's y axis may ever show for these counts: on a log axis from 1
// (a log axis has no 0) to the largest value rounded up; on a linear one from 0 to the
// largest value rounded up to the step the unzoomed axis ends on. Zooming out stops there.
export function valueBounds(counts, lo, hi, unit, scale) {
  if (scale === 'lin') {
    const r = heatRangeLinear(counts, hi, unit, 0, 0);
    return r ? { min: 0, max: r.ymax } : null;
  }
  const top = cutValue(counts, hi, 0);
  if (top == null) return null;
  return { min: 1, max: Math.max(4, niceUp(top, unit)) };
}

// Clamp a y range to `bounds`, keeping its span when it fits (a range pushed past the top
// slides down), and at least the smallest zoom span.
export function clampRange(ymin, ymax, bounds, scale) {
  if (!bounds) return { ymin, ymax };
  // Already inside and wide enough: as is (round values stay round on the axis).
  const wide = scale === 'lin' ? ymax - ymin >= Math.max(8, (bounds.max - bounds.min) * MIN_LIN_SHARE) : ymax / ymin >= MIN_LOG_RATIO;
  if (ymin >= bounds.min && ymax <= bounds.max && wide) return { ymin, ymax };
  if (scale === 'lin') {
    const full = bounds.max - bounds.min;
    const minSpan = Math.max(8, full * MIN_LIN_SHARE);
    let span = Math.min(full, Math.max(minSpan, ymax - ymin));
    let a = Math.max(bounds.min, ymin);
    if (a + span > bounds.max) a = bounds.max - span;
    if (!(span > 0)) span = full;
    return { ymin: Math.max(bounds.min, a), ymax: Math.max(bounds.min, a) + span };
  }
  const full = Math.log(bounds.max / bounds.min);
  const span = Math.min(full, Math.max(Math.log(MIN_LOG_RATIO), Math.log(Math.max(ymax, 1) / Math.max(ymin, 1))));
  let a = Math.log(Math.max(bounds.min, ymin));
  if (a + span > Math.log(bounds.max)) a = Math.log(bounds.max) - span;
  a = Math.max(Math.log(bounds.min), a);
  return { ymin: Math.exp(a), ymax: Math.exp(a + span) };
}

// The y range [ymin, ymax] of a heat map for bucket counts `counts`, outlier cut `pct`
// and vertical zoom `vz` (each step in halves the log span, keeping the bottom; negative
// zooms out, up to the bounds of `valueBounds`). A range spans at least a factor of 4 so a
// single bucket is a band, not a wall. `yr` ([low, high], from the side panel) sets the
// range itself (clamped to the bounds); vz then applies around it.
export function heatRange(counts, lo, hi, unit, pct, vz, yr) {
  const top = cutValue(counts, hi, pct);
  const bottom = floorValue(counts, lo);
  if (top == null || bottom == null) return null;
  let ymin = niceDown(bottom, unit);
  let ymax = niceUp(Math.max(top, bottom + 1), unit);
  if (ymax / ymin < 4) {
    const mid = Math.sqrt(ymin * ymax);
    ymin = niceDown(Math.max(1, mid / 2), unit);
    ymax = niceUp(Math.max(ymin * 4, mid * 2), unit);
  }
  const bounds = valueBounds(counts, lo, hi, unit, 'log');
  bounds.max = Math.max(bounds.max, ymax);
  if (yr && yr[1] > yr[0]) {
    ymin = Math.max(1, yr[0]);
    ymax = Math.max(ymin * MIN_LOG_RATIO, yr[1]);
  }
  if (vz) {
    const span = Math.log(ymax / ymin) * 2 ** -vz;
    ymax = ymin * Math.exp(span);
  }
  return clampRange(ymin, ymax, bounds, 'log');
}

// Log-scale mapping of values to pixel offsets from the top of a plot of height h.
export function logScale(ymin, ymax, h) {
  const l0 = Math.log(ymin);
  const k = h / (Math.log(ymax) - l0);
  return {
    toY: (v) => h - (Math.log(Math.max(v, 1e-300)) - l0) * k,
    fromY: (y) => Math.exp(l0 + (h - y) / k),
  };
}

// Linear mapping, for the heat map's optional linear y axis (offset art).
export function linScale(ymin, ymax, h) {
  const k = h / (ymax - ymin);
  return {
    toY: (v) => h - (v - ymin) * k,
    fromY: (y) => ymin + (h - y) / k,
  };
}

// Pixel rows [top[b], bot[b]] (0 = top row, inclusive) that bucket b touches in a plot of
// `h` rows, -1 when the bucket is entirely outside the y range; and its exact extent
// [y0[b], y1[b]) in fractional rows (top edge, bottom edge), which `accumulate` uses to
// share the bucket's count among the rows it covers. A bucket covers the values [lo, hi + 1).
export function bucketRows(lo, hi, scale, h) {
  const nb = lo.length;
  const top = new Int32Array(nb);
  const bot = new Int32Array(nb);
  const y0 = new Float64Array(nb);
  const y1 = new Float64Array(nb);
  for (let b = 0; b < nb; b++) {
    // Value 0 (offset 0) shares the row of value 1: a log axis has no 0.
    const low = Math.max(lo[b], 1);
    const yTop = scale.toY(Math.max(hi[b] + 1, low + 1));
    const yBot = scale.toY(low);
    y0[b] = yTop;
    y1[b] = yBot;
    if (yBot <= 0 || yTop >= h) {
      top[b] = -1;
      bot[b] = -1;
      continue;
    }
    top[b] = Math.max(0, Math.min(h - 1, Math.floor(yTop)));
    bot[b] = Math.max(0, Math.min(h - 1, Math.max(Math.floor(yTop), Math.ceil(yBot) - 1)));
  }
  return { top, bot, y0, y1 };
}

// Pixel columns for seconds [from, to] over a plot `w` pixels wide. Each second covers
// [x(s), x(s+1)) with x(t) = (t - from) * w / (to + 1 - from); when there are more seconds
// than pixels, the seconds of one pixel column are summed into one bin.
// Returns { nbins, binOf(second), x0: Int32Array(nbins + 1) } (bin b spans x0[b]..x0[b+1]).
export function columnBins(from, to, w) {
  const n = Math.max(1, to + 1 - from);
  const width = Math.max(1, Math.floor(w));
  if (n <= width) {
    const x0 = new Int32Array(n + 1);
    for (let b = 0; b <= n; b++) x0[b] = Math.floor((b * width) / n);
    return { nbins: n, x0, binOf: (s) => s - from };
  }
  const x0 = new Int32Array(width + 1);
  for (let b = 0; b <= width; b++) x0[b] = b;
  return { nbins: width, x0, binOf: (s) => Math.floor(((s - from) * width) / n) };
}

// The seconds [first, last] summed into the pixel column of second `s` (bins of
// columnBins(from, to, w)): one second when zoomed in, several when zoomed out.
export function binSeconds(from, to, w, s) {
  const n = Math.max(1, to + 1 - from);
  const width = Math.max(1, Math.floor(w));
  if (n <= width) return [s, s];
  const bin = Math.floor(((s - from) * width) / n);
  return [from + Math.ceil((bin * n) / width), Math.min(to, from + Math.ceil(((bin + 1) * n) / width) - 1)];
}

// The seconds [first, last] that the columns starting within [a, b] cover (what a pixel
// column of a heat map in columns of several seconds sums), or [a, b] when no column
// starts there; with one column per second, [a, b] itself.
export function coveredSeconds(heat, a, b) {
  const cs = heat.columnSeconds || 1;
  if (cs <= 1) return [a, b];
  const [i0, i1] = indexRange(heat.seconds, a, b);
  if (i0 >= i1) return [a, b];
  return [heat.seconds[i0], heat.seconds[i1 - 1] + cs - 1];
}

// The columns of several seconds that a whole-run view of `nSeconds` seconds needs on a
// plot `widthPx` pixels wide: as many seconds per column as every pixel column holds at
// least (so each pixel column gets at least one column start), 1 when a pixel holds
// fewer than two seconds.
export function columnSecondsFor(nSeconds, widthPx) {
  const cs = Math.floor(nSeconds / Math.max(1, Math.floor(widthPx)));
  return cs >= 2 ? cs : 1;
}

// The y range of a heat map on a linear axis (offsets: a file is a line of blocks): from
// 0 to the outlier cut rounded up to a round step (a power of two for bytes); each
// vertical zoom step in halves the span, keeping the bottom, never past 0 .. the largest
// value (rounded up the same way). `yr` as for heatRange.
export function heatRangeLinear(counts, hi, unit, pct, vz, yr) {
  const top = cutValue(counts, hi, pct);
  if (top == null) return null;
  const roundUp = (v) => {
    const t = Math.max(v, 2);
    const step = unit === 'bytes' ? 2 ** Math.ceil(Math.log2(t / 8)) : niceUp(t / 8, unit);
    return Math.ceil(t / step - 1e-9) * step;
  };
  let ymin = 0;
  let ymax = roundUp(top);
  if (!vz && !yr) return { ymin, ymax };
  const bounds = { min: 0, max: Math.max(ymax, roundUp(cutValue(counts, hi, 0))) };
  if (yr && yr[1] > yr[0]) {
    ymin = Math.max(0, yr[0]);
    ymax = yr[1];
  }
  if (vz) ymax = ymin + (ymax - ymin) * 2 ** -vz;
  return clampRange(ymin, ymax, bounds, 'lin');
}

// Sum the cells of a heat map. `layers` is a list of key sets (null = every series); each
// layer gets its own grid of nbins x h counts (index bin * h + row), summing the seconds of
// each bin and the buckets of each row. `cells` counts the distinct non-empty
// (bin, bucket) pairs within the y range: what a reader sees as drawn cells.
export function accumulate(heat, layers, i0, i1, bins, rows, h) {
  const { nbins, binOf } = bins;
  const { top, bot, y0, y1 } = rows;
  const grids = layers.map(() => new Float64Array(nbins * h));
  const maxes = layers.map(() => 0);
  const seen = new Int32Array(heat.lo.length).fill(-1);
  let cells = 0;
  const layerOf = heat.series.map((s) => layers.findIndex((ks) => wanted(ks, s.key)));
  for (let i = i0; i < i1; i++) {
    const bin = binOf(heat.seconds[i]);
    if (bin < 0 || bin >= nbins) continue;
    const base = bin * h;
    for (let si = 0; si < heat.series.length; si++) {
      const li = layerOf[si];
      if (li < 0) continue;
      const col = heat.series[si].columns[i];
      if (!col || col.length === 0) continue;
      const grid = grids[li];
      for (let j = 0; j + 1 < col.length; j += 2) {
        const b = col[j];
        const c = col[j + 1];
        const r0 = top[b];
        if (r0 < 0 || !(c > 0)) continue;
        if (seen[b] !== bin) {
          seen[b] = bin;
          cells++;
        }
        const r1 = bot[b];
        const span = y1[b] - y0[b];
        if (r0 === r1 && y0[b] >= r0 && y1[b] <= r0 + 1) {
          grid[base + r0] += c;
          continue;
        }
        if (!(span > 0)) {
          grid[base + r0] += c;
          continue;
        }
        // The bucket's I/O are shared among its rows by how much of each row it covers:
        // adjacent buckets fill adjacent rows with no gap, and a row two buckets share
        // is not counted twice (no stripes the data does not have).
        for (let r = r0; r <= r1; r++) {
          const part = Math.min(r + 1, y1[b]) - Math.max(r, y0[b]);
          if (part > 0) grid[base + r] += (c * part) / span;
        }
      }
    }
  }
  for (let li = 0; li < grids.length; li++) {
    const g = grids[li];
    let m = 0;
    for (let k = 0; k < g.length; k++) if (g[k] > m) m = g[k];
    maxes[li] = m;
  }
  return { grids, maxes, cells };
}

// Count per breakdown value over seconds [i0, i1), in the response's series order.
export function keyTotals(heat, i0, i1) {
  return heat.series.map((s) => {
    let n = 0;
    for (let i = i0; i < i1; i++) {
      const col = s.columns[i];
      if (!col) continue;
      for (let j = 1; j < col.length; j += 2) n += col[j];
    }
    return { key: s.key, count: n };
  });
}

// The bucket ranges with their counts in seconds [i0, i1) (the column under the cursor),
// highest values first: [{ lo, hi, count }].
export function valuesAt(heat, keys, i0, i1) {
  const counts = bucketCounts(heat, keys, i0, i1);
  const out = [];
  for (let b = counts.length - 1; b >= 0; b--) {
    if (counts[b] > 0) out.push({ lo: heat.lo[b], hi: heat.hi[b], count: counts[b] });
  }
  return out;
}

// The edges of the coarse value ranges of the side panel, what the eye groups a heat map
// by: on a log axis 1-2-5 per decade (ns, counts) or powers of two (bytes), on a linear
// axis the step of about eight bands up to `vmax`. Ascending, from 0, the last above vmax.
export function coarseEdges(unit, scale, vmax) {
  const top = Math.max(1, vmax);
  const edges = [0];
  if (scale === 'lin') {
    const step = unit === 'bytes' ? 2 ** Math.ceil(Math.log2(Math.max(1, top / 8))) : niceUp(top / 8, unit);
    for (let v = step; edges.length < 64; v += step) {
      edges.push(v);
      if (v > top) break;
    }
    return edges;
  }
  for (let e = 1; edges.length < 256; ) {
    const next = unit === 'bytes' ? [e] : [e, 2 * e, 5 * e];
    for (const v of next) edges.push(v);
    if (edges[edges.length - 1] > top) break;
    e *= unit === 'bytes' ? 2 : 10;
  }
  while (edges.length > 2 && edges[edges.length - 2] > top) edges.pop();
  return edges;
}

// The I/O at the cursor grouped into coarse value ranges, fastest first, as the seeds'
// panel reads ("most I/Os faster than 55 µs"): each range [lo, hi) with its count, its
// share of the total and the cumulative share up to its top, and its fine buckets
// (ascending). A bucket belongs to the range its lower bound falls in.
export function coarseRanges(heat, keys, i0, i1, edges) {
  const counts = bucketCounts(heat, keys, i0, i1);
  let total = 0;
  for (let b = 0; b < counts.length; b++) total += counts[b];
  const ranges = [];
  let k = 0;
  let cum = 0;
  for (let b = 0; b < counts.length; b++) {
    if (!(counts[b] > 0)) continue;
    const v = heat.lo[b];
    while (k + 2 < edges.length && v >= edges[k + 1]) k++;
    let r = ranges[ranges.length - 1];
    if (!r || r.lo !== edges[k]) {
      r = { lo: edges[k], hi: v >= edges[k + 1] ? Infinity : edges[k + 1], count: 0, pct: 0, cum: 0, buckets: [] };
      ranges.push(r);
    }
    r.count += counts[b];
    r.buckets.push({ lo: heat.lo[b], hi: heat.hi[b], count: counts[b] });
  }
  for (const r of ranges) {
    cum += r.count;
    r.pct = total ? (100 * r.count) / total : 0;
    r.cum = total ? (100 * cum) / total : 0;
  }
  return { total, ranges };
}

// Append newer seconds (a response for from = some second) to a prepared heat map: the
// bucket lists are merged and columns re-indexed; seconds present in both are replaced by
// the newer response. Series absent on one side get empty columns. Returns a new object.
export function mergeHeat(old, add) {
  const index = new Map();
  const buckets = [];
  const pushAll = (list) => {
    for (const bk of list) {
      const k = bk[0];
      if (!index.has(k)) {
        index.set(k, -1);
        buckets.push(bk);
      }
    }
  };
  pushAll(old.buckets);
  pushAll(add.buckets);
  buckets.sort((a, b) => a[0] - b[0]);
  buckets.forEach((bk, i) => index.set(bk[0], i));
  const remap = (h) => h.buckets.map((bk) => index.get(bk[0]));
  const mOld = remap(old);
  const mAdd = remap(add);
  const firstNew = add.seconds.length ? add.seconds[0] : Infinity;
  let keepOld = 0;
  while (keepOld < old.seconds.length && old.seconds[keepOld] < firstNew) keepOld++;
  const seconds = old.seconds.slice(0, keepOld).concat(add.seconds);
  const keys = [];
  for (const s of old.series) if (!keys.includes(s.key)) keys.push(s.key);
  for (const s of add.series) if (!keys.includes(s.key)) keys.push(s.key);
  const conv = (col, map) => {
    if (!col) return [];
    const out = new Array(col.length);
    for (let j = 0; j + 1 < col.length; j += 2) {
      out[j] = map[col[j]];
      out[j + 1] = col[j + 1];
    }
    return out;
  };
  const series = keys.map((key) => {
    const so = old.series.find((s) => s.key === key);
    const sa = add.series.find((s) => s.key === key);
    const columns = [];
    for (let i = 0; i < keepOld; i++) columns.push(so ? conv(so.columns[i], mOld) : []);
    for (let i = 0; i < add.seconds.length; i++) columns.push(sa ? conv(sa.columns[i], mAdd) : []);
    let total = 0;
    for (const c of columns) for (let j = 1; j < c.length; j += 2) total += c[j];
    return { key, total, columns };
  });
  return prepareHeat({
    stat: add.stat || old.stat,
    unit: add.unit || old.unit,
    by: old.by,
    where: old.where,
    relative_error: add.relative_error ?? old.relErr,
    seconds,
    buckets,
    series,
  });
}
