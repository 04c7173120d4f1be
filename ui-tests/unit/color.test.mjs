// The heat-map colours: a lone I/O must show, more I/O must look hotter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  HEAT_LUT, GREY_LUT, PLOT_BG, WARMUP_BG, rampIndex, contrast, luminance, hueLut, keyColor,
} from '../../crates/web/assets/color.js';

const rgbAt = (lut, i) => [lut[i * 4], lut[i * 4 + 1], lut[i * 4 + 2]];

test('one I/O in a cell stands out against the plot background', () => {
  const i = rampIndex(1, 1_000_000);
  assert.equal(i, 0, 'count 1 takes the first colour of the ramp');
  const c = rgbAt(HEAT_LUT, i);
  assert.ok(contrast(c, PLOT_BG) >= 2.5, `contrast ${contrast(c, PLOT_BG).toFixed(2)} against the background`);
  assert.ok(contrast(c, WARMUP_BG) >= 2, 'and against warm-up seconds');
  assert.equal(rampIndex(0, 1000), -1, 'an empty cell is background');
});

test('the ramp is monotone: more I/O is brighter, the densest cell brightest', () => {
  let prev = -1;
  for (let i = 0; i < 256; i++) {
    const l = luminance(rgbAt(HEAT_LUT, i));
    assert.ok(l >= prev - 1e-9, `luminance drops at ${i}`);
    prev = l;
  }
  assert.ok(luminance(rgbAt(HEAT_LUT, 255)) > 0.75);
  let last = -1;
  for (const c of [1, 2, 10, 100, 1000, 100_000, 1_000_000]) {
    const k = rampIndex(c, 1_000_000);
    assert.ok(k > last, `count ${c} is hotter than the previous`);
    last = k;
  }
  assert.equal(rampIndex(1_000_000, 1_000_000), 255);
});

test('grey and highlight ramps are also visible at their low end', () => {
  assert.ok(contrast(rgbAt(GREY_LUT, 0), PLOT_BG) >= 2);
  const lut = hueLut('#5aa2ff');
  assert.ok(contrast(rgbAt(lut, 0), PLOT_BG) >= 2);
  assert.ok(luminance(rgbAt(lut, 255)) > luminance(rgbAt(lut, 0)));
});

test('breakdown colours: reads and writes keep their colours; others are distinct', () => {
  assert.equal(keyColor('read', 5, ['write', 'read']), '#5aa2ff');
  assert.equal(keyColor('write', 0, ['write', 'read']), '#f2a541');
  const keys = ['h1', 'h2', 'h3', 'read'];
  const cs = keys.map((k, i) => keyColor(k, i, keys));
  assert.equal(new Set(cs).size, 4, 'four keys, four colours');
});
