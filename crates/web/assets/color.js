// color.js: the palette. Breakdown colours (a few restrained hues that hold up on the
// dark background), and the heat-map ramps as 256-entry RGBA lookup tables: the false-colour
// ramp (count on a log scale; one I/O in a cell is already a clearly visible violet, the
// densest cells near white), a grey ramp for values not highlighted, and per-hue ramps for
// highlighted breakdown values. Pure: no DOM.

// Background of a plot area and of warm-up seconds in it.
export const PLOT_BG = [12, 15, 20];
export const WARMUP_BG = [24, 27, 35];

// Well-known breakdown keys keep their colour across charts and runs.
const NAMED = {
  read: '#5aa2ff',
  write: '#f2a541',
  all: '#8fb8ff',
  fsync: '#b48cff',
  fdatasync: '#e9739a',
  open: '#4fd1a5',
  close: '#7f8ea3',
  create: '#9fd86b',
  delete: '#ff7b63',
  getattr: '#6fd3e8',
  setattr: '#d9c25a',
  mkdir: '#c59be0',
  rmdir: '#e0a07a',
  copy: '#7bc8a4',
  move: '#d98fcf',
  verify: '#e6b673',
  list: '#a0b4d0',
  flow: '#f0e0a0',
};

export const PALETTE = [
  '#5aa2ff', '#f2a541', '#4fd1a5', '#e9739a', '#b48cff',
  '#6fd3e8', '#d9c25a', '#ff8a5c', '#9fd86b', '#c59be0',
  '#7f9cf5', '#e6b673',
];

// Colour of breakdown key `key`, the `index`-th of its chart: named keys first, then the
// palette in order, skipping hues already taken by named keys in the same chart.
export function keyColor(key, index, keys) {
  if (NAMED[key]) return NAMED[key];
  const taken = new Set((keys || []).map((k) => NAMED[k]).filter(Boolean));
  const free = PALETTE.filter((c) => !taken.has(c));
  const unnamed = (keys || []).filter((k) => !NAMED[k]);
  const pos = keys ? unnamed.indexOf(key) : index;
  const list = free.length ? free : PALETTE;
  return list[(pos < 0 ? index : pos) % list.length];
}

// Percentile lines of a single distribution: cool to hot as the percentile rises, max
// near white (and dotted) so it never reads as p99.9.
export const PERCENTILE_COLORS = {
  p50: '#4fd1a5',
  p90: '#5aa2ff',
  p99: '#f2a541',
  p999: '#ff4a5a',
  max: '#d8dee9',
};

export function hexToRgb(hex) {
  const h = hex.replace('#', '');
  const n = parseInt(h.length === 3 ? h.split('').map((c) => c + c).join('') : h, 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

export function rgba(hex, alpha) {
  const [r, g, b] = hexToRgb(hex);
  return `rgba(${r},${g},${b},${alpha})`;
}

// WCAG relative luminance and contrast ratio (used to check the ramp against the plot).
export function luminance(rgb) {
  const f = (c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * f(rgb[0]) + 0.7152 * f(rgb[1]) + 0.0722 * f(rgb[2]);
}

export function contrast(a, b) {
  const la = luminance(a);
  const lb = luminance(b);
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}

function lerpStops(stops, n) {
  const lut = new Uint8ClampedArray(n * 4);
  for (let i = 0; i < n; i++) {
    const t = n === 1 ? 0 : i / (n - 1);
    let k = 0;
    while (k + 1 < stops.length - 1 && t > stops[k + 1][0]) k++;
    const [t0, c0] = stops[k];
    const [t1, c1] = stops[k + 1];
    const u = t1 > t0 ? Math.min(1, Math.max(0, (t - t0) / (t1 - t0))) : 0;
    for (let j = 0; j < 3; j++) lut[i * 4 + j] = Math.round(c0[j] + (c1[j] - c0[j]) * u);
    lut[i * 4 + 3] = 255;
  }
  return lut;
}

// The false-colour ramp, as in Analytics' heat maps: each stop brighter than the last.
export const HEAT_STOPS = [
  [0.0, [98, 58, 208]], // one I/O: violet, clearly off the background
  [0.25, [170, 62, 170]], // purple
  [0.45, [226, 82, 110]], // rose
  [0.65, [250, 140, 60]], // orange
  [0.85, [250, 220, 70]], // yellow
  [1.0, [255, 243, 184]], // pale yellow: the densest cells
];

export const HEAT_LUT = lerpStops(HEAT_STOPS, 256);

// Values not highlighted in a broken-down heat map: grey, dim to light.
export const GREY_LUT = lerpStops([[0, [68, 74, 86]], [1, [176, 182, 194]]], 256);

// A ramp in one hue for a highlighted breakdown value: a dim but visible shade of the hue
// up to the hue, then towards white.
export function hueLut(hex) {
  const c = hexToRgb(hex);
  const dim = c.map((v, i) => Math.round(v * 0.55 + PLOT_BG[i] * 0.45));
  const light = c.map((v) => Math.round(v + (255 - v) * 0.55));
  return lerpStops([[0, dim], [0.6, c], [1, light]], 256);
}

// Index into a 256-entry ramp for a cell count: log scale from 1 to `max`;
// -1 for an empty cell (background). Count 1 is index 0, the first visible colour. A map
// whose densest cell holds fewer than 4 stays in the low colours (sparse is not hot).
export function rampIndex(count, max) {
  if (!(count > 0)) return -1;
  const t = Math.log(count) / Math.log(Math.max(max, 4));
  return Math.max(0, Math.min(255, Math.round(t * 255)));
}

// Precomputed scale for rampIndex in hot loops: index = round(log(count) * k).
export function rampScale(max) {
  return 255 / Math.log(Math.max(max, 4));
}
