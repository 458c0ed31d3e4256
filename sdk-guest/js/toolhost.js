// Write toolhost tools in JavaScript: one function per tool, its input
// (and, optionally, output) schema declared as a plain JSON Schema object.
//
//   import { plugin, InvalidInput, Output, image, progress } from "toolhost";
//
//   export const tool = plugin({
//     js_greet: {
//       description: "Greet someone.",
//       input: {
//         type: "object",
//         properties: { name: { type: "string", description: "Who to greet." } },
//         required: ["name"],
//       },
//       output: { type: "object", properties: { greeting: { type: "string" } }, required: ["greeting"] },
//       annotations: { title: "Greeter", readOnly: true },
//       run({ name }) {
//         if (name === "") throw new InvalidInput("name must not be empty");
//         progress.report(1, 1, "greeted");
//         return { greeting: `Hello, ${name}!` };
//       },
//     },
//   });
//
// The component's export is the `tool` interface of toolhost:plugin@0.2.0
// (wit/0.2), so the plugin module must export the result of `plugin(...)`
// as `tool`. The host validates each input against `input` before `run`
// sees it, and each result against `output` when the tool declares one
// (a mismatch is the error `output_schema_mismatch`). `run`'s return value
// is sent back as JSON; return `new Output(value, [image(png)])` to add
// content parts (text, image, audio, an embedded resource) beside it, or
// `new Output(undefined, [...])` for parts alone. `progress.report` tells
// the caller how far a long call is; `user.ask` asks the person behind it.
// Throw `InvalidInput`, `Failed` or `Denied` for a structured tool error; any
// other exception becomes `failed` with its message and where it was thrown
// (its stack: file:line:column of each frame, innermost first, bounded), so
// `toolhost call` shows the line.
//
// Works with both jco backends (StarlingMonkey and QuickJS).

import * as hostModule from "toolhost:plugin/host@0.2.0";
import * as progressModule from "toolhost:plugin/progress@0.2.0";
import * as userModule from "toolhost:plugin/user@0.2.0";

// QuickJS exposes an interface as the module's default export,
// StarlingMonkey as named exports.
const host = hostModule.log ? hostModule : hostModule.default;
const progressImport = progressModule.report ? progressModule : progressModule.default;
const userImport = userModule.ask ? userModule : userModule.default;

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
const ANNOTATIONS = { title: "string", readOnly: "boolean", destructive: "boolean", idempotent: "boolean", openWorld: "boolean" };
const EMPTY_INPUT = { type: "object", properties: {}, additionalProperties: false };

/** Log `message` through the host at `level` (trace, debug, info, warn, error). */
export function log(level, message) {
  host.log(LEVELS.has(level) ? level : "info", String(message));
}

/** The value of `key` in the `[config]` table of the plugin's manifest, or null. */
export function config(key) {
  const value = host.config(key);
  return value === undefined ? null : value;
}

function bytes(data, what) {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (Array.isArray(data)) return Uint8Array.from(data);
  throw new TypeError(`${what} must be a Uint8Array, not ${data === null ? "null" : typeof data}`);
}

/** A text content part. */
export function text(value) {
  return { tag: "text", val: String(value) };
}

/** An image content part: its bytes (Uint8Array) and media type. */
export function image(data, mediaType = "image/png") {
  return { tag: "image", val: { mediaType: String(mediaType), data: bytes(data, "image data") } };
}

/** An audio content part: its bytes (Uint8Array) and media type (`audio/wav`, ...). */
export function audio(data, mediaType) {
  if (typeof mediaType !== "string") throw new TypeError("audio needs a media type, such as audio/wav");
  return { tag: "audio", val: { mediaType, data: bytes(data, "audio data") } };
}

/** A resource embedded in the result: its URI and contents (a string, or bytes). */
export function resource(uri, contents, mediaType = null) {
  const body = typeof contents === "string" ? { tag: "text", val: contents } : { tag: "blob", val: bytes(contents, "resource contents") };
  return { tag: "resource", val: { uri: String(uri), mediaType: mediaType ?? null, contents: body } };
}

const PART_TAGS = new Set(["text", "image", "audio", "resource"]);

/**
 * A result with content parts: `value` is the structured result (what
 * `output` describes; `undefined` for none) and `content` the parts, in
 * order, made with `text`, `image`, `audio` and `resource`.
 */
export class Output {
  constructor(value, content = []) {
    if (!Array.isArray(content)) throw new TypeError("Output content must be an array of parts");
    for (const part of content) {
      if (!part || !PART_TAGS.has(part.tag)) throw new TypeError("a content part is made with text(), image(), audio() or resource()");
    }
    this.value = value;
    this.content = content;
  }
}

/** Report how far the running call is: `done` of `total` (when known), in the tool's own units. */
export const progress = {
  report(done, total = null, message = null) {
    if (typeof done !== "number" || !Number.isFinite(done)) throw new TypeError(`progress done must be a finite number, not ${done}`);
    if (total !== null && total !== undefined && (typeof total !== "number" || !Number.isFinite(total))) {
      throw new TypeError(`progress total must be a finite number, not ${total}`);
    }
    progressImport.report(done, total ?? null, message === null || message === undefined ? null : String(message));
  },
};

/** `ask` got no answer. Uncaught, the tool fails with this message, which names the question. */
export class AskError extends ToolFailure {
  constructor(question, reason, detail) {
    const shown = question.length > 200 ? `${question.slice(0, 200)}...` : question;
    super(`the tool needed an answer to ${JSON.stringify(shown)} and could not ask: ${detail}`, "failed");
    this.name = "AskError";
    this.question = question;
    this.reason = reason; // "unavailable", "over-budget" or "invalid-schema"
    this.detail = detail;
  }
}

/** Questions for the person behind the call. */
export const user = {
  /**
   * Ask `message` with a form shaped by `schema` (a JSON Schema of a flat
   * object of strings, numbers, integers, booleans and string enums).
   * Returns `{ action: "accept", content }`, `{ action: "decline" }` or
   * `{ action: "cancel" }`; throws `AskError` when there is no answer to
   * give (`reason` "unavailable": no one can be asked here).
   */
  ask(message, schema) {
    if (typeof message !== "string") throw new TypeError("the question must be a string");
    if (schema === null || typeof schema !== "object" || schema.type !== "object") {
      throw new TypeError('the question\'s schema must be a JSON Schema object with type "object"');
    }
    let answer;
    try {
      answer = userImport.ask(message, JSON.stringify(schema));
    } catch (e) {
      // QuickJS throws the error variant itself, StarlingMonkey a
      // ComponentError carrying it as `payload`.
      const error = e?.payload ?? e;
      if (error && typeof error.tag === "string") throw new AskError(message, error.tag, String(error.val ?? error.tag));
      throw e;
    }
    if (answer.tag === "accept") {
      let content;
      try {
        content = JSON.parse(answer.val);
      } catch (e) {
        throw new AskError(message, "invalid-schema", `the answer is not JSON: ${e.message}`);
      }
      return { action: "accept", content };
    }
    return { action: answer.tag };
  },
};

function checkAnnotations(name, annotations) {
  if (annotations === undefined) return {};
  if (annotations === null || typeof annotations !== "object") throw new Error(`tool ${name}: annotations must be an object`);
  for (const [key, value] of Object.entries(annotations)) {
    if (!Object.hasOwn(ANNOTATIONS, key)) {
      throw new Error(`tool ${name}: unknown annotation ${JSON.stringify(key)}; use ${Object.keys(ANNOTATIONS).join(", ")}`);
    }
    if (value !== undefined && value !== null && typeof value !== ANNOTATIONS[key]) throw new Error(`tool ${name}: annotation ${key} must be a ${ANNOTATIONS[key]}`);
  }
  return annotations;
}

/**
 * Build the `tool` export from a map of tool name to
 * `{ description, input, output, annotations, run }`. Checks the
 * declarations once, at build time (componentization runs the module), so a
 * mistake fails the build.
 */
export function plugin(tools) {
  const entries = Object.entries(tools);
  if (entries.length === 0) throw new Error("plugin() needs at least one tool");
  const infos = entries.map(([name, spec]) => {
    if (!NAME.test(name)) throw new Error(`tool name ${JSON.stringify(name)} must be 1-64 characters of a-z A-Z 0-9 _ -`);
    if (typeof spec.description !== "string" || spec.description === "") throw new Error(`tool ${name} needs a description`);
    if (typeof spec.run !== "function") throw new Error(`tool ${name} needs a run(input) function`);
    const input = spec.input ?? EMPTY_INPUT;
    if (input.type !== "object") throw new Error(`tool ${name}: input schema must have type "object"`);
    if (spec.output !== undefined && (spec.output === null || spec.output.type !== "object")) {
      throw new Error(`tool ${name}: output schema must have type "object"`);
    }
    const hints = checkAnnotations(name, spec.annotations);
    return {
      name,
      description: spec.description,
      inputSchema: JSON.stringify(input),
      outputSchema: spec.output === undefined ? null : JSON.stringify(spec.output),
      annotations: {
        title: hints.title ?? null,
        readOnly: hints.readOnly ?? null,
        destructive: hints.destructive ?? null,
        idempotent: hints.idempotent ?? null,
        openWorld: hints.openWorld ?? null,
      },
      meta: null,
    };
  });

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
      let content = [];
      if (output instanceof Output) {
        content = output.content;
        if (output.value === undefined) return { json: null, content };
        output = output.value;
      }
      if (output === undefined) output = null;
      let json;
      try {
        json = JSON.stringify(output);
      } catch (e) {
        throw { tag: "failed", val: `tool ${name} returned a value that is not JSON: ${e.message}` };
      }
      if (json === undefined) throw { tag: "failed", val: `tool ${name} returned a value that is not JSON` };
      return { json, content };
    },
  };
}
