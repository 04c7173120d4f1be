// api.js: where the data comes from. Live: the JSON API under /api/v1 (docs/api.md).
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
  return p;
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

export async function getData(runId, kind, opts) {
  return getJson(queryPath(runId, kind, opts));
}
