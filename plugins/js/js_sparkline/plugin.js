// js_sparkline: draw a number series as a small PNG line chart (a sparkline)
// and summarise it. Built by plugins/js/build.sh against plugin contract 0.2:
// the PNG is an image content part beside the structured summary, which the
// output schema describes.
import { plugin, InvalidInput, Output, image } from "../../../sdk-guest/js/toolhost.js";

const MAX_POINTS = 10000;

// CRC-32 (PNG chunks) and Adler-32 (the zlib stream), table-driven.
const CRC_TABLE = new Uint32Array(256).map((_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function adler32(bytes) {
  let a = 1;
  let b = 0;
  for (const x of bytes) {
    a = (a + x) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function u32(n) {
  return new Uint8Array([n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]);
}

// A zlib stream of stored (uncompressed) deflate blocks: a sparkline is a few
// KB, so compression would save little and cost code.
function zlibStored(raw) {
  const parts = [new Uint8Array([0x78, 0x01])];
  for (let at = 0; at < raw.length || at === 0; at += 65535) {
    const block = raw.subarray(at, at + 65535);
    const last = at + 65535 >= raw.length ? 1 : 0;
    parts.push(new Uint8Array([last, block.length & 0xff, block.length >>> 8, ~block.length & 0xff, (~block.length >>> 8) & 0xff]), block);
    if (raw.length === 0) break;
  }
  parts.push(u32(adler32(raw)));
  return concat(parts);
}

function chunk(type, data) {
  const head = new Uint8Array([...type].map((c) => c.charCodeAt(0)));
  return concat([u32(data.length), head, data, u32(crc32(concat([head, data])))]);
}

// An 8-bit grayscale PNG of `pixels` (one byte per pixel, row by row).
function png(width, height, pixels) {
  const raw = new Uint8Array(height * (width + 1));
  for (let y = 0; y < height; y++) raw.set(pixels.subarray(y * width, (y + 1) * width), y * (width + 1) + 1);
  const header = concat([u32(width), u32(height), new Uint8Array([8, 0, 0, 0, 0])]);
  return concat([new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", header), chunk("IDAT", zlibStored(raw)), chunk("IEND", new Uint8Array(0))]);
}

function draw(values, width, height) {
  const pixels = new Uint8Array(width * height).fill(255);
  const min = values.reduce((a, b) => Math.min(a, b));
  const max = values.reduce((a, b) => Math.max(a, b));
  const span = max - min || 1;
  const x = (i) => (values.length === 1 ? 0 : Math.round((i * (width - 1)) / (values.length - 1)));
  const y = (v) => height - 1 - Math.round(((v - min) * (height - 1)) / span);
  const plot = (px, py) => {
    pixels[py * width + px] = 0;
  };
  // Bresenham between consecutive points.
  for (let i = 0; i < values.length; i++) {
    let [x0, y0] = [x(i), y(values[i])];
    const [x1, y1] = i + 1 < values.length ? [x(i + 1), y(values[i + 1])] : [x0, y0];
    const dx = Math.abs(x1 - x0);
    const dy = -Math.abs(y1 - y0);
    const sx = x0 < x1 ? 1 : -1;
    const sy = y0 < y1 ? 1 : -1;
    let e = dx + dy;
    for (;;) {
      plot(x0, y0);
      if (x0 === x1 && y0 === y1) break;
      const e2 = 2 * e;
      if (e2 >= dy) {
        e += dy;
        x0 += sx;
      }
      if (e2 <= dx) {
        e += dx;
        y0 += sy;
      }
    }
  }
  return { pixels, min, max };
}

export const tool = plugin({
  js_sparkline_draw: {
    description:
      "Draw a series of numbers as a small PNG line chart (a sparkline) and summarise it: count, min, max, first, last and mean.",
    input: {
      type: "object",
      properties: {
        values: { type: "array", items: { type: "number" }, minItems: 1, maxItems: MAX_POINTS, description: "The series, in order." },
        width: { type: "integer", minimum: 8, maximum: 1024, description: "Image width in pixels (default 160)." },
        height: { type: "integer", minimum: 8, maximum: 512, description: "Image height in pixels (default 32)." },
      },
      required: ["values"],
      additionalProperties: false,
    },
    output: {
      type: "object",
      properties: {
        count: { type: "integer" },
        min: { type: "number" },
        max: { type: "number" },
        first: { type: "number" },
        last: { type: "number" },
        mean: { type: "number" },
        width: { type: "integer" },
        height: { type: "integer" },
        bytes: { type: "integer", description: "Size of the PNG." },
      },
      required: ["count", "min", "max", "first", "last", "mean", "width", "height", "bytes"],
      additionalProperties: false,
    },
    annotations: { title: "Draw a sparkline", readOnly: true, idempotent: true, openWorld: false },
    run({ values, width = 160, height = 32 }) {
      if (values.some((v) => !Number.isFinite(v))) throw new InvalidInput("every value must be a finite number");
      const { pixels, min, max } = draw(values, width, height);
      const data = png(width, height, pixels);
      const mean = values.reduce((a, b) => a + b, 0) / values.length;
      const summary = { count: values.length, min, max, first: values[0], last: values.at(-1), mean, width, height, bytes: data.length };
      return new Output(summary, [image(data, "image/png")]);
    },
  },
});
