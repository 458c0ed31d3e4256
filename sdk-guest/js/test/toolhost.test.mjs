// Tests of the toolhost JS SDK under plain Node.js:
//   node --import ./sdk-guest/js/test/register-host-stub.mjs --test sdk-guest/js/test/toolhost.test.mjs
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  plugin, InvalidInput, Failed, Denied, log, config, describeException,
  Output, text, image, audio, resource, progress, user, AskError,
  offers, message, NotFound,
} from "../toolhost.js";
import { logs, reports } from "./host-stub.mjs";

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

function err(name, input = "{}", from = tool) {
  try {
    from.call(name, input);
  } catch (e) {
    return e;
  }
  assert.fail(`${name} did not throw`);
}

const NO_HINTS = { title: null, readOnly: null, destructive: null, idempotent: null, openWorld: null };

test("describe lists names, descriptions and schemas as JSON text", () => {
  const infos = tool.describe();
  assert.equal(infos.length, 9);
  assert.deepEqual(infos[0], {
    name: "t_double",
    description: "Double a.",
    inputSchema: JSON.stringify(schema),
    outputSchema: null,
    annotations: NO_HINTS,
    meta: null,
  });
  assert.deepEqual(JSON.parse(infos[1].inputSchema), { type: "object", properties: {}, additionalProperties: false });
});

test("call returns JSON text and no content", () => {
  assert.deepEqual(tool.call("t_double", '{"a": 21}'), { json: '{"doubled":42}', content: [] });
  assert.deepEqual(tool.call("t_nothing", "{}"), { json: "null", content: [] });
});

test("an output schema and annotations are declared; mistakes in them fail the build", () => {
  const out = { type: "object", properties: { n: { type: "integer" } }, required: ["n"] };
  const declared = plugin({
    t_typed: { description: "x", output: out, annotations: { title: "Typed", readOnly: true, openWorld: false }, run: () => ({ n: 1 }) },
  });
  const [info] = declared.describe();
  assert.deepEqual(JSON.parse(info.outputSchema), out);
  assert.deepEqual(info.annotations, { ...NO_HINTS, title: "Typed", readOnly: true, openWorld: false });
  assert.throws(() => plugin({ t: { description: "x", output: { type: "array" }, run() {} } }), /output schema must have type "object"/);
  assert.throws(() => plugin({ t: { description: "x", annotations: { readonly: true }, run() {} } }), /unknown annotation "readonly"/);
  assert.throws(() => plugin({ t: { description: "x", annotations: { title: 3 }, run() {} } }), /title must be a string/);
});

test("content parts travel beside the JSON, or instead of it", () => {
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47]);
  const parts = plugin({
    t_both: { description: "x", run: () => new Output({ bytes: 4 }, [image(png), text("a chart")]) },
    t_only: {
      description: "x",
      run: () => new Output(undefined, [audio([1, 2], "audio/wav"), resource("file:///a.txt", "hi", "text/plain"), resource("mem://b", png)]),
    },
    t_bad: { description: "x", run: () => new Output(null, [{ tag: "video" }]) },
  });
  assert.deepEqual(parts.call("t_both", "{}"), {
    json: '{"bytes":4}',
    content: [
      { tag: "image", val: { mediaType: "image/png", data: png } },
      { tag: "text", val: "a chart" },
    ],
  });
  const only = parts.call("t_only", "{}");
  assert.equal(only.json, null);
  assert.deepEqual(only.content[0], { tag: "audio", val: { mediaType: "audio/wav", data: new Uint8Array([1, 2]) } });
  assert.deepEqual(only.content[1], { tag: "resource", val: { uri: "file:///a.txt", mediaType: "text/plain", contents: { tag: "text", val: "hi" } } });
  assert.deepEqual(only.content[2].val.contents, { tag: "blob", val: png });
  assert.equal(only.content[2].val.mediaType, null);
  const bad = (() => { try { parts.call("t_bad", "{}"); } catch (e) { return e; } })();
  assert.equal(bad.tag, "failed");
  assert.match(bad.val, /TypeError: a content part is made with/);
  assert.throws(() => image("not bytes"), /Uint8Array/);
  assert.throws(() => audio(new Uint8Array(1)), /media type/);
});

test("progress reports reach the host; a bad number is the tool's bug", () => {
  reports.length = 0;
  progress.report(1, 4, "one");
  progress.report(2);
  assert.deepEqual(reports, [[1, 4, "one"], [2, null, null]]);
  assert.throws(() => progress.report(NaN), /finite number/);
  assert.throws(() => progress.report(1, "4"), /total must be a finite number/);
});

test("ask: an answer, a refusal, and no one to ask", () => {
  const form = { type: "object", properties: { branch: { type: "string" } }, required: ["branch"] };
  globalThis.toolhostAsk = (message, schemaText) => {
    assert.deepEqual(JSON.parse(schemaText), form);
    return message === "yes?" ? { tag: "accept", val: '{"branch":"main"}' } : { tag: "decline" };
  };
  assert.deepEqual(user.ask("yes?", form), { action: "accept", content: { branch: "main" } });
  assert.deepEqual(user.ask("no?", form), { action: "decline" });
  // StarlingMonkey wraps the error variant in a ComponentError's payload.
  globalThis.toolhostAsk = () => {
    throw Object.assign(new Error("ComponentError"), { payload: { tag: "over-budget", val: "one question per call" } });
  };
  assert.throws(() => user.ask("again?", form), (e) => e instanceof AskError && e.reason === "over-budget" && /one question per call/.test(e.message));
  delete globalThis.toolhostAsk;
  const asking = plugin({
    t_handles: {
      description: "x",
      run() {
        try {
          return user.ask("Which branch?", form);
        } catch (e) {
          if (e instanceof AskError && e.reason === "unavailable") throw new InvalidInput(`pass \`branch\`: ${e.detail}`);
          throw e;
        }
      },
    },
    t_ignores: { description: "x", run: () => user.ask("Which branch?", form) },
  });
  assert.deepEqual(err("t_handles", "{}", asking), { tag: "invalid-input", val: "pass `branch`: no one to ask in this test" });
  const uncaught = err("t_ignores", "{}", asking);
  assert.equal(uncaught.tag, "failed");
  assert.equal(uncaught.val, 'the tool needed an answer to "Which branch?" and could not ask: no one to ask in this test');
  assert.throws(() => user.ask("x", { type: "string" }), /type "object"/);
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
  assert.equal(tool.call("t_host", "{}").json, '{"c":"v","missing":null}');
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

// ---- Contract 0.3: resources, templates, prompts, completions --------------

const offered = offers({
  resources: {
    "t-js://about": { name: "about", description: "About.", mimeType: "text/markdown", read: () => "# t_js" },
    "t-js://logo": { name: "logo", mimeType: "image/png", read: () => new Uint8Array([1, 2]) },
    "t-js://two": { read: () => [resource("t-js://two/a", "a", "text/plain"), resource("t-js://two/b", new Uint8Array([3]))] },
  },
  templates: {
    "t-js://greeting/{name}": { name: "greeting", mimeType: "text/plain", read: ({ name }) => `${config("greeting") ?? "Hello"}, ${name}!` },
    "t-js://day/{year}/{day}": {
      name: "day",
      read({ year, day }) {
        if (!/^\d+$/.test(year)) throw new InvalidInput(`${year} is not a year`);
        return `${day} of ${year}`;
      },
      complete: { day: (value, context) => ({ values: [`${context.year}-${value}1`], total: 31, hasMore: true }) },
    },
  },
  prompts: {
    t_js_welcome: {
      description: "Welcome someone.",
      arguments: { name: { description: "Who.", required: true }, tone: { description: "How." } },
      get: ({ name, tone = "warm" }) => `Welcome ${name}, ${tone}ly.`,
      complete: { name: (value) => ["Ada", "Alan", "Grace"].filter((n) => n.startsWith(value)) },
    },
    t_js_look: { get: () => [message(image(new Uint8Array([9]))), message("What is this?", "assistant"), message(resource("t-js://about", "# t_js"))] },
    t_js_broken: { get: () => null.x },
    t_js_missing: { get: () => { throw new NotFound("gone"); } },
  },
});

function offerErr(f) {
  try {
    f();
  } catch (e) {
    return e;
  }
  assert.fail("did not throw");
}

test("offers lists resources and templates with their names and MIME types", () => {
  assert.deepEqual(offered.resources.listResources()[0], { uri: "t-js://about", name: "about", description: "About.", mimeType: "text/markdown", meta: null });
  assert.equal(offered.resources.listResources()[2].name, "t-js://two");
  assert.deepEqual(offered.resources.listTemplates().map((t) => t.uri), ["t-js://greeting/{name}", "t-js://day/{year}/{day}"]);
});

test("a read answers text, bytes or parts with the resource's MIME type", () => {
  assert.deepEqual(offered.resources.read("t-js://about", []), [{ uri: "t-js://about", mimeType: "text/markdown", contents: { tag: "text", val: "# t_js" } }]);
  assert.deepEqual(offered.resources.read("t-js://logo", [])[0].contents, { tag: "blob", val: new Uint8Array([1, 2]) });
  const two = offered.resources.read("t-js://two", []);
  assert.deepEqual(two.map((p) => [p.uri, p.mimeType]), [["t-js://two/a", "text/plain"], ["t-js://two/b", null]]);
});

test("a template reads with its variables, the host's match first", () => {
  globalThis.toolhostConfig = { greeting: "Howdy" };
  try {
    assert.equal(offered.resources.read("t-js://greeting/Ada", [])[0].contents.val, "Howdy, Ada!");
  } finally {
    globalThis.toolhostConfig = {};
  }
  assert.equal(offered.resources.read("t-js://greeting/Ada%20L", [])[0].contents.val, "Hello, Ada L!");
  assert.equal(offered.resources.read("t-js://greeting/x", [["name", "Grace"]])[0].contents.val, "Hello, Grace!");
  assert.equal(offered.resources.read("t-js://day/2024/monday", [])[0].contents.val, "monday of 2024");
});

test("unknown URIs and bad values are offer errors", () => {
  assert.equal(offerErr(() => offered.resources.read("t-js://nothing", [])).tag, "not-found");
  assert.equal(offerErr(() => offered.resources.read("t-js://greeting/a/b", [])).tag, "not-found");
  assert.deepEqual(offerErr(() => offered.resources.read("t-js://day/soon/x", [])), { tag: "invalid-input", val: "soon is not a year" });
});

test("a prompt lists its arguments and renders text as one user message", () => {
  const [welcome] = offered.prompts.listPrompts();
  assert.deepEqual(welcome.arguments, [
    { name: "name", description: "Who.", required: true },
    { name: "tone", description: "How.", required: false },
  ]);
  assert.deepEqual(offered.prompts.get("t_js_welcome", [["name", "Ada"]]), {
    description: "Welcome someone.",
    messages: [{ role: "user", content: { tag: "text", val: "Welcome Ada, warmly." } }],
  });
});

test("a prompt's messages carry images, roles and embedded resources", () => {
  const { messages } = offered.prompts.get("t_js_look", []);
  assert.deepEqual(messages[0], { role: "user", content: { tag: "image", val: { mediaType: "image/png", data: new Uint8Array([9]) } } });
  assert.equal(messages[1].role, "assistant");
  assert.deepEqual(messages[2].content.val, { uri: "t-js://about", mimeType: null, contents: { tag: "text", val: "# t_js" } });
});

test("missing, unknown and failing prompts are offer errors", () => {
  assert.equal(offerErr(() => offered.prompts.get("t_js_welcome", [])).tag, "invalid-input");
  assert.match(offerErr(() => offered.prompts.get("t_js_welcome", [["name", "A"], ["colour", "red"]])).val, /colour/);
  assert.equal(offerErr(() => offered.prompts.get("t_js_nothing", [])).tag, "not-found");
  assert.deepEqual(offerErr(() => offered.prompts.get("t_js_missing", [])), { tag: "not-found", val: "gone" });
  const broken = offerErr(() => offered.prompts.get("t_js_broken", []));
  assert.equal(broken.tag, "failed");
  assert.match(broken.val, /^prompt t_js_broken: TypeError/);
});

test("completions filter by what was typed, in order, with the context", () => {
  const complete = (value) => offered.completions.complete({ tag: "prompt", val: "t_js_welcome" }, "name", value, []);
  assert.deepEqual(complete("A"), { values: ["Ada", "Alan"], total: 2, hasMore: false });
  assert.deepEqual(complete("G").values, ["Grace"]);
  assert.deepEqual(
    offered.completions.complete({ tag: "template", val: "t-js://day/{year}/{day}" }, "day", "0", [["year", "2024"]]),
    { values: ["2024-01"], total: 31, hasMore: true },
  );
  assert.deepEqual(offered.completions.complete({ tag: "prompt", val: "t_js_welcome" }, "tone", "w", []).values, []);
});

test("offers checks its declarations at build time", () => {
  assert.throws(() => offers({ resources: { "no-scheme": { read: () => "" } } }), /scheme/);
  assert.throws(() => offers({ resources: { "t://x": {} } }), /read/);
  assert.throws(() => offers({ templates: { "t://plain": { read: () => "" } } }), /no \{variable\}/);
  assert.throws(() => offers({ prompts: { "bad name": { get: () => "" } } }), /prompt name/);
  assert.throws(() => offers({ prompts: { p: { get: () => "", complete: { a: 1 } } } }), /complete\.a/);
  assert.throws(() => message("hi", "system"), /role/);
});
