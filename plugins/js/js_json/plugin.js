// js_json: read and compare JSON documents. Built by plugins/js/build.sh.
import { plugin, InvalidInput } from "../../../sdk-guest/js/toolhost.js";

// "a.b[0].c" or "a/b/0/c" -> ["a", "b", 0, "c"]
function parsePath(path) {
  if (path === "" || path === "$") return [];
  const parts = [];
  const text = path.startsWith("$") ? path.slice(1) : path;
  const re = /\[(\d+)\]|\[\"((?:[^"\\]|\\.)*)\"\]|([^.\[\]/]+)/g;
  let m;
  let consumed = 0;
  while ((m = re.exec(text)) !== null) {
    const gap = text.slice(consumed, m.index).replace(/[./]/g, "");
    if (gap !== "") throw new InvalidInput(`cannot parse path ${JSON.stringify(path)} near ${JSON.stringify(gap)}`);
    if (m[1] !== undefined) parts.push(Number(m[1]));
    else if (m[2] !== undefined) parts.push(JSON.parse(`"${m[2]}"`));
    else parts.push(/^\d+$/.test(m[3]) ? Number(m[3]) : m[3]);
    consumed = re.lastIndex;
  }
  return parts;
}

function parseDocument(text, what) {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new InvalidInput(`${what} is not valid JSON: ${e.message}`);
  }
}

function formatPath(parts) {
  return parts.map((p) => (typeof p === "number" ? `[${p}]` : /^[A-Za-z_][A-Za-z0-9_]*$/.test(p) ? `.${p}` : `[${JSON.stringify(p)}]`)).join("") || "$";
}

function kind(v) {
  return v === null ? "null" : Array.isArray(v) ? "array" : typeof v;
}

function diff(a, b, path, out, limit) {
  if (out.length >= limit) return;
  const ka = kind(a);
  const kb = kind(b);
  if (ka !== kb) {
    out.push({ path: formatPath(path), change: "changed", before: a, after: b });
  } else if (ka === "array") {
    const n = Math.max(a.length, b.length);
    for (let i = 0; i < n; i++) {
      if (i >= a.length) out.push({ path: formatPath([...path, i]), change: "added", after: b[i] });
      else if (i >= b.length) out.push({ path: formatPath([...path, i]), change: "removed", before: a[i] });
      else diff(a[i], b[i], [...path, i], out, limit);
      if (out.length >= limit) return;
    }
  } else if (ka === "object") {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of [...keys].sort()) {
      if (!Object.hasOwn(b, k)) out.push({ path: formatPath([...path, k]), change: "removed", before: a[k] });
      else if (!Object.hasOwn(a, k)) out.push({ path: formatPath([...path, k]), change: "added", after: b[k] });
      else diff(a[k], b[k], [...path, k], out, limit);
      if (out.length >= limit) return;
    }
  } else if (a !== b) {
    out.push({ path: formatPath(path), change: "changed", before: a, after: b });
  }
}

export const tool = plugin({
  js_json_get: {
    description:
      "Extract the value at a path from a JSON document. Paths look like `a.b[0].c`, `a/b/0/c` or `$` for the whole document.",
    input: {
      type: "object",
      properties: {
        document: { type: "string", description: "The JSON document, as text." },
        path: { type: "string", description: "Where to look, e.g. `items[2].name`." },
      },
      required: ["document", "path"],
      additionalProperties: false,
    },
    run({ document, path }) {
      let value = parseDocument(document, "document");
      const parts = parsePath(path);
      for (let i = 0; i < parts.length; i++) {
        const key = parts[i];
        const container = kind(value);
        const found =
          (container === "array" && typeof key === "number" && key < value.length) ||
          (container === "object" && Object.hasOwn(value, String(key)));
        if (!found) {
          return { found: false, missing_at: formatPath(parts.slice(0, i + 1)), parent_type: container };
        }
        value = value[container === "array" ? key : String(key)];
      }
      return { found: true, value, type: kind(value) };
    },
  },
  js_json_diff: {
    description:
      "Compare two JSON documents and list what was added, removed or changed, with the path of each difference.",
    input: {
      type: "object",
      properties: {
        before: { type: "string", description: "The first JSON document, as text." },
        after: { type: "string", description: "The second JSON document, as text." },
        max_changes: { type: "integer", minimum: 1, maximum: 1000, description: "Stop after this many differences (default 100)." },
      },
      required: ["before", "after"],
      additionalProperties: false,
    },
    run({ before, after, max_changes = 100 }) {
      const changes = [];
      diff(parseDocument(before, "before"), parseDocument(after, "after"), [], changes, max_changes);
      return { equal: changes.length === 0, truncated: changes.length >= max_changes, changes };
    },
  },
});
