// api.js: where the data comes from. Live: the JSON API under /api/v1 (docs/api.md), heat
// maps in its packed encoding (decoded here by unpackHeatmap).
// Embedded report: window.IOSCOPE_EMBEDDED = { runs, responses: { "<path?query>": ... },
// worksheet }, answered by exact key with no network; a missing key is NotIncluded.

export class NotIncluded extends Error {
  constructor(path) {
    super('not included in this report');
    this.path = path;
    this.notIncluded = true;
  }
}

export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

function embedded() {
  return typeof window !== 'undefined' && window.IOSCOPE_EMBEDDED ? window.IOSCOPE_EMBEDDED : null;
}

export function isEmbedded() {
  return !!embedded();
}

export function embeddedWorksheet() {
  const e = embedded();
  return e && typeof e.worksheet === 'string' ? e.worksheet : null;
}

// `dim:value;dim:value` for the query string: encoded, with ':' and ';' kept readable.
function encodeWhere(w) {
  return encodeURIComponent(w).replace(/%3A/gi, ':').replace(/%3B/gi, ';');
}

// The exact path of a series or heatmap query; also the key of an embedded response.
export function queryPath(runId, kind, opts) {
  const o = opts || {};
  let p = `/api/v1/runs/${runId}/${kind}?stat=${encodeURIComponent(o.stat)}`;
  if (o.by) p += `&by=${encodeURIComponent(o.by)}`;
  if (o.where) p += `&where=${encodeWhere(o.where)}`;
  if (o.from != null) p += `&from=${o.from}`;
  if (o.to != null) p += `&to=${o.to}`;
  if (kind === 'heatmap') p += '&encoding=packed';
  // Columns of several seconds, each the exact sum of its seconds (docs/api.md).
  if (kind === 'heatmap' && o.columnSeconds > 1) p += `&column_seconds=${o.columnSeconds}`;
  return p;
}

// Whether the answer of a query is at hand: always from a server; in a report, only the
// answers it embedded (the UI offers nothing else).
export function isAnswered(runId, kind, opts) {
  const e = embedded();
  if (!e) return true;
  return !!e.responses && e.responses[queryPath(runId, kind, opts)] !== undefined;
}

// Base64 text to bytes.
function base64Bytes(text) {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// Unsigned LEB128 varints to numbers (exact up to 2^53).
function varints(bytes) {
  const out = [];
  let v = 0;
  let scale = 1;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    v += (b & 0x7f) * scale;
    if (b < 0x80) {
      out.push(v);
      v = 0;
      scale = 1;
    } else {
      scale *= 128;
    }
  }
  return out;
}

// A /heatmap answer in the packed encoding (docs/api.md) turned into the JSON form: each
// series gets `columns`, per second (or column of `column_seconds`) a flat [bucket, count, bucket, count, ...] (views of
// one Float64Array per series). Other answers are returned as they are.
export function unpackHeatmap(resp) {
  if (!resp || resp.encoding !== 'packed') return resp;
  const series = resp.series.map((s) => {
    const lengths = varints(base64Bytes(s.lengths));
    const steps = base64Bytes(s.steps);
    const counts = base64Bytes(s.counts);
    let cells = 0;
    for (const n of lengths) cells += n;
    const flat = new Float64Array(2 * cells);
    // Steps and counts are read in step, one varint each per cell (inline: millions of
    // cells in an hour).
    let si = 0;
    let ci = 0;
    let at = 0;
    const columns = new Array(lengths.length);
    for (let i = 0; i < lengths.length; i++) {
      const start = at;
      let bucket = 0;
      for (let k = lengths[i]; k > 0; k--) {
        let b = steps[si++];
        let v = b & 0x7f;
        for (let scale = 128; b >= 0x80; scale *= 128) {
          b = steps[si++];
          v += (b & 0x7f) * scale;
        }
        bucket += v;
        b = counts[ci++];
        v = b & 0x7f;
        for (let scale = 128; b >= 0x80; scale *= 128) {
          b = counts[ci++];
          v += (b & 0x7f) * scale;
        }
        flat[at++] = bucket;
        flat[at++] = v;
      }
      columns[i] = flat.subarray(start, at);
    }
    // Reading past the end gives undefined, which the loops above cannot tell from 0.
    if (si > steps.length || ci > counts.length || Number.isNaN(flat[at - 1])) {
      throw new ApiError('a packed heat map ends early', 0);
    }
    return { key: s.key, total: s.total, columns };
  });
  const out = { ...resp, series };
  delete out.encoding;
  return out;
}

export function runPath(runId) {
  return `/api/v1/runs/${runId}`;
}

async function getJson(path) {
  const e = embedded();
  if (e) {
    if (path === '/api/v1/runs') return e.runs;
    const r = e.responses ? e.responses[path] : undefined;
    if (r === undefined) throw new NotIncluded(path);
    return r;
  }
  let res;
  try {
    res = await fetch(path, { cache: 'no-store' });
  } catch (err) {
    throw new ApiError(`cannot reach the ioscope server (${err.message})`, 0);
  }
  let body = null;
  try {
    body = await res.json();
  } catch (_) {
    body = null;
  }
  if (!res.ok) throw new ApiError((body && body.error) || `${res.status} ${res.statusText}`, res.status);
  return body;
}

export async function getRuns() {
  return getJson('/api/v1/runs');
}

export async function getRun(runId) {
  return getJson(runPath(runId));
}

// Run `withId` (B) compared with run `runId` (A): docs/api.md, schema/compare.schema.json.
export function comparePath(runId, withId) {
  return `/api/v1/runs/${runId}/compare?with=${encodeURIComponent(withId)}`;
}

export async function getCompare(runId, withId) {
  return getJson(comparePath(runId, withId));
}

export async function getData(runId, kind, opts) {
  const resp = await getJson(queryPath(runId, kind, opts));
  return kind === 'heatmap' ? unpackHeatmap(resp) : resp;
}
