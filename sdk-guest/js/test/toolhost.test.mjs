// Tests of the toolhost JS SDK under plain Node.js:
//   node --import ./sdk-guest/js/test/register-host-stub.mjs --test sdk-guest/js/test/toolhost.test.mjs
import assert from "node:assert/strict";
import { test } from "node:test";

import { plugin, InvalidInput, Failed, Denied, log, config, describeException } from "../toolhost.js";
import { logs } from "./host-stub.mjs";

const schema = { type: "object", properties: { a: { type: "integer" } }, required: ["a"], additionalProperties: false };

const tool = plugin({
  t_double: { description: "Double a.", input: schema, run: ({ a }) => ({ doubled: a * 2 }) },
  t_nothing: { description: "Returns undefined.", run() {} },
  t_invalid: { description: "x", run: () => { throw new InvalidInput("bad a"); } },
  t_failed: { description: "x", run: () => { throw new Failed("broke"); } },
  t_denied: { description: "x", run: () => { throw new Denied("no /etc"); } },
  t_throws: { description: "x", run: () => { throw new RangeError("too big"); } },
  t_cyclic: { description: "x", run: () => { const o = {}; o.o = o; return o; } },
  t_bigint: { description: "x", run: () => 1n },
  t_host: { description: "x", run: () => { log("warn", "hi"); log("loud", 1); return { c: config("k"), missing: config("nope") }; } },
});

function err(name, input = "{}") {
  try {
    tool.call(name, input);
  } catch (e) {
    return e;
  }
  assert.fail(`${name} did not throw`);
}

test("describe lists names, descriptions and schemas as JSON text", () => {
  const infos = tool.describe();
  assert.equal(infos.length, 9);
  assert.deepEqual(infos[0], { name: "t_double", description: "Double a.", inputSchema: JSON.stringify(schema) });
  assert.deepEqual(JSON.parse(infos[1].inputSchema), { type: "object", properties: {}, additionalProperties: false });
});

test("call returns JSON text", () => {
  assert.equal(tool.call("t_double", '{"a": 21}'), '{"doubled":42}');
  assert.equal(tool.call("t_nothing", "{}"), "null");
});

test("errors become tool-error variants", () => {
  assert.deepEqual(err("t_invalid"), { tag: "invalid-input", val: "bad a" });
  assert.deepEqual(err("t_failed"), { tag: "failed", val: "broke" });
  assert.deepEqual(err("t_denied"), { tag: "denied", val: "no /etc" });
  assert.equal(err("t_throws").tag, "failed");
  assert.equal(err("t_throws").val.split("\n")[0], "RangeError: too big");
  assert.equal(err("t_cyclic").tag, "failed");
  assert.match(err("t_bigint").val, /not JSON/);
  assert.equal(err("nope").tag, "unknown-tool");
  assert.equal(err("t_double", "{").tag, "invalid-input");
  assert.equal(err("toString").tag, "unknown-tool");
});

test("host imports: log levels are checked, config missing is null", () => {
  globalThis.toolhostConfig = { k: "v" };
  assert.equal(tool.call("t_host", "{}"), '{"c":"v","missing":null}');
  assert.deepEqual(logs.slice(-2), [["warn", "hi"], ["info", "1"]]);
});

test("declaration mistakes throw at build time", () => {
  assert.throws(() => plugin({}), /at least one tool/);
  assert.throws(() => plugin({ "bad name": { description: "x", run() {} } }), /1-64/);
  assert.throws(() => plugin({ t: { run() {} } }), /description/);
  assert.throws(() => plugin({ t: { description: "x" } }), /run/);
  assert.throws(() => plugin({ t: { description: "x", input: { type: "array" }, run() {} } }), /type "object"/);
});

test("an uncaught exception carries where it was thrown, not the SDK's frames", () => {
  const { val } = err("t_throws");
  const lines = val.split("\n");
  assert.equal(lines[0], "RangeError: too big");
  assert.ok(lines.length >= 2, val);
  assert.match(lines[1], /toolhost\.test\.mjs:\d+/, val);
  assert.ok(!/toolhost\.js:/.test(val), val);
});

test("a deep stack or a long message stays bounded", () => {
  const deep = plugin({
    t_deep: {
      description: "x",
      run: () => {
        const down = (k) => {
          if (k === 0) throw new TypeError("y".repeat(100000));
          down(k - 1);
        };
        down(50);
      },
    },
  });
  let val;
  try {
    deep.call("t_deep", "{}");
  } catch (e) {
    val = e.val;
  }
  assert.ok(val.length < 4000, `${val.length}`);
  assert.ok(val.startsWith("TypeError: yyy"), val.slice(0, 40));
  assert.match(val, /more characters\]/);
  assert.match(val, /outer frames left out|at /);
  // A QuickJS-style stack (no column) and a thrown non-Error.
  const fake = { name: "Error", message: "m", stack: "    at run (plugin.js:7)\n    at call (plugin.js:120)\n" };
  Object.setPrototypeOf(fake, Error.prototype);
  assert.equal(describeException(fake, "    at call (plugin.js:118)\n"), "Error: m\n    at run (plugin.js:7)");
  assert.equal(describeException("just text", ""), "thrown: just text");
});
