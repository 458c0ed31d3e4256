// Write toolhost tools in JavaScript: one function per tool, its input
// schema declared as a plain JSON Schema object.
//
//   import { plugin, InvalidInput } from "toolhost";
//
//   export const tool = plugin({
//     js_greet: {
//       description: "Greet someone.",
//       input: {
//         type: "object",
//         properties: { name: { type: "string", description: "Who to greet." } },
//         required: ["name"],
//       },
//       run({ name }) {
//         if (name === "") throw new InvalidInput("name must not be empty");
//         return { greeting: `Hello, ${name}!` };
//       },
//     },
//   });
//
// The component's export is the `tool` interface of toolhost:plugin@0.1.0, so
// the plugin module must export the result of `plugin(...)` as `tool`. The
// host validates each input against `input` before `run` sees it; `run`'s
// return value is sent back as JSON. Throw `InvalidInput`, `Failed` or
// `Denied` for a structured tool error; any other exception becomes `failed`
// with its message and where it was thrown (its stack: file:line:column of
// each frame, innermost first, bounded), so `toolhost call` shows the line.
//
// Works with both jco backends (StarlingMonkey and QuickJS).

import * as hostModule from "toolhost:plugin/host@0.1.0";

// QuickJS exposes an interface as the module's default export,
// StarlingMonkey as named exports.
const host = hostModule.log ? hostModule : hostModule.default;

// An error message is read by a person and a model, and the host caps it
// (8 KiB at most): the stack keeps within a budget of its own.
const STACK_FRAMES = 10;
const MESSAGE_CHARS = 1000;
const FRAME_CHARS = 200;

/**
 * `Name: message`, then the frames of the exception's stack from where it
 * was thrown up to the SDK's own `call` (whose stack is `here`, taken in
 * the catch): the tool's frames only, at most STACK_FRAMES of them.
 */
export function describeException(e, here) {
  let message = e instanceof Error ? e.message : String(e);
  if (message.length > MESSAGE_CHARS) {
    message = `${message.slice(0, MESSAGE_CHARS)}... [${message.length - MESSAGE_CHARS} more characters]`;
  }
  const name = e instanceof Error ? (e.name ?? "Error") : "thrown";
  const head = message ? `${name}: ${message}` : name;
  const frameLines = (stack) =>
    typeof stack === "string" ? stack.split("\n").filter((l) => /^\s*at /.test(l)).map((l) => l.trim()) : [];
  let frames = frameLines(e?.stack);
  // V8 writes `at call (file:12:7)`, QuickJS `at call (file:12)`: the
  // function and file identify the SDK's frame, whatever the line.
  const sdk = frameLines(here)[0]?.replace(/:\d+(:\d+)?\)?$/, "");
  if (sdk) {
    const cut = frames.findIndex((f) => f.replace(/:\d+(:\d+)?\)?$/, "") === sdk);
    if (cut >= 0) frames = frames.slice(0, cut);
  }
  if (frames.length === 0) return head;
  const kept = frames.slice(0, STACK_FRAMES).map((f) => `    ${f.slice(0, FRAME_CHARS)}`);
  if (frames.length > STACK_FRAMES) kept.push(`    ... ${frames.length - STACK_FRAMES} outer frames left out`);
  return `${head}\n${kept.join("\n")}`;
}

/** Base of the errors a tool throws to return a structured tool error. */
export class ToolFailure extends Error {
  constructor(message, tag = "failed") {
    super(message);
    this.tag = tag;
  }
}

/** The input matches the schema but its values make no sense; the model should fix them. */
export class InvalidInput extends ToolFailure {
  constructor(message) {
    super(message, "invalid-input");
  }
}

/** The tool ran and could not do its job. */
export class Failed extends ToolFailure {
  constructor(message) {
    super(message, "failed");
  }
}

/** The sandbox refused something the tool needed. */
export class Denied extends ToolFailure {
  constructor(message) {
    super(message, "denied");
  }
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const LEVELS = new Set(["trace", "debug", "info", "warn", "error"]);

/** Log `message` through the host at `level` (trace, debug, info, warn, error). */
export function log(level, message) {
  host.log(LEVELS.has(level) ? level : "info", String(message));
}

/** The value of `key` in the `[config]` table of the plugin's manifest, or null. */
export function config(key) {
  const value = host.config(key);
  return value === undefined ? null : value;
}

/**
 * Build the `tool` export from a map of tool name to
 * `{ description, input, run }`. Checks the declarations once, at build
 * time (componentization runs the module), so a mistake fails the build.
 */
export function plugin(tools) {
  const entries = Object.entries(tools);
  if (entries.length === 0) throw new Error("plugin() needs at least one tool");
  for (const [name, spec] of entries) {
    if (!NAME.test(name)) throw new Error(`tool name ${JSON.stringify(name)} must be 1-64 characters of a-z A-Z 0-9 _ -`);
    if (typeof spec.description !== "string" || spec.description === "") throw new Error(`tool ${name} needs a description`);
    if (typeof spec.run !== "function") throw new Error(`tool ${name} needs a run(input) function`);
    const input = spec.input ?? { type: "object", properties: {}, additionalProperties: false };
    if (input.type !== "object") throw new Error(`tool ${name}: input schema must have type "object"`);
  }
  const infos = entries.map(([name, spec]) => ({
    name,
    description: spec.description,
    inputSchema: JSON.stringify(spec.input ?? { type: "object", properties: {}, additionalProperties: false }),
  }));

  return {
    describe() {
      return infos;
    },
    call(name, inputJson) {
      const spec = Object.hasOwn(tools, name) ? tools[name] : undefined;
      if (spec === undefined) {
        throw { tag: "unknown-tool", val: `no tool named ${JSON.stringify(name)}; this plugin has ${Object.keys(tools).join(", ")}` };
      }
      let input;
      try {
        input = JSON.parse(inputJson);
      } catch (e) {
        throw { tag: "invalid-input", val: `input is not JSON: ${e.message}` };
      }
      let output;
      try {
        output = spec.run(input);
      } catch (e) {
        if (e instanceof ToolFailure) throw { tag: e.tag, val: e.message || e.tag };
        throw { tag: "failed", val: describeException(e, new Error().stack) };
      }
      if (output === undefined) output = null;
      let text;
      try {
        text = JSON.stringify(output);
      } catch (e) {
        throw { tag: "failed", val: `tool ${name} returned a value that is not JSON: ${e.message}` };
      }
      if (text === undefined) throw { tag: "failed", val: `tool ${name} returned a value that is not JSON` };
      return text;
    },
  };
}
