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
// Resources, resource templates, prompts and completions (contract 0.3) are
// declared with `offers({...})`, whose result the module exports as
// `resources`, `prompts` and `completions` (see `offers` below).
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

/** No such resource, prompt or argument (an offer's `not-found` error). */
export class NotFound extends ToolFailure {
  constructor(message) {
    super(message, "not-found");
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

// ---- Contract 0.3: what a plugin offers besides tools ----------------------

const VARIABLE = /\{([A-Za-z0-9_]+)\}/g;
const ROLES = new Set(["user", "assistant"]);

/**
 * One message of a rendered prompt: `content` is a string (text) or a part
 * made with `text`, `image`, `audio` or `resource`; `role` "user" or
 * "assistant".
 */
export function message(content, role = "user") {
  if (!ROLES.has(role)) throw new TypeError(`a message's role is "user" or "assistant", not ${JSON.stringify(role)}`);
  const part = typeof content === "string" ? text(content) : content;
  if (!part || !PART_TAGS.has(part.tag)) throw new TypeError("a message holds a string or a part made with text(), image(), audio() or resource()");
  return { role, content: part };
}

function optional(value, what) {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") throw new Error(`${what} must be a string`);
  return value;
}

function checkComplete(what, complete) {
  if (complete === undefined) return {};
  if (complete === null || typeof complete !== "object") throw new Error(`${what}: complete must be an object of argument name to function`);
  for (const [arg, f] of Object.entries(complete)) {
    if (typeof f !== "function") throw new Error(`${what}: complete.${arg} must be a function(value, context)`);
  }
  return complete;
}

function offered(kind, uri, spec) {
  const what = `${kind} ${JSON.stringify(uri)}`;
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(uri)) throw new Error(`${what} needs a scheme: SCHEME://..., SCHEME the plugin's name with _ as -`);
  if (spec === null || typeof spec !== "object" || typeof spec.read !== "function") throw new Error(`${what} needs a read() function`);
  const info = {
    uri,
    name: spec.name ?? uri,
    description: optional(spec.description, `${what}: description`),
    mimeType: optional(spec.mimeType, `${what}: mimeType`),
    meta: null,
  };
  if (typeof info.name !== "string" || info.name === "") throw new Error(`${what}: name must be a string`);
  return info;
}

function templatePattern(uri) {
  let source = "^";
  let last = 0;
  const names = [];
  for (const m of uri.matchAll(VARIABLE)) {
    source += uri.slice(last, m.index).replace(/[.*+?^${}()|[\]\\/]/g, "\\$&") + "([^/?#]*)";
    names.push(m[1]);
    last = m.index + m[0].length;
  }
  if (names.length === 0) throw new Error(`resource template ${JSON.stringify(uri)} has no {variable}; list it under resources`);
  source += uri.slice(last).replace(/[.*+?^${}()|[\]\\/]/g, "\\$&") + "$";
  return { regex: new RegExp(source), names };
}

/** `error` as the contract's `offer-error` variant (thrown). */
function offerError(e, what) {
  if (e instanceof ToolFailure) {
    const tag = e.tag === "unknown-tool" ? "not-found" : e.tag;
    return { tag, val: e.message || tag };
  }
  return { tag: "failed", val: `${what}: ${describeException(e, new Error().stack)}` };
}

function readParts(uri, mimeType, result) {
  if (typeof result === "string") return [{ uri, mimeType: mimeType ?? "text/plain", contents: { tag: "text", val: result } }];
  if (result instanceof Uint8Array || result instanceof ArrayBuffer) {
    return [{ uri, mimeType: mimeType ?? "application/octet-stream", contents: { tag: "blob", val: bytes(result, "resource contents") } }];
  }
  const parts = Array.isArray(result) ? result : [result];
  return parts.map((p) => {
    if (!p || p.tag !== "resource") throw new Failed(`resource ${uri} returned something else than a string, bytes or resource() parts`);
    return { uri: p.val.uri, mimeType: p.val.mediaType, contents: p.val.contents };
  });
}

function promptPart(part) {
  if (part.tag !== "resource") return part;
  return { tag: "resource", val: { uri: part.val.uri, mimeType: part.val.mediaType, contents: part.val.contents } };
}

function completion(result, what) {
  if (Array.isArray(result) && result.every((v) => typeof v === "string")) return { values: result, total: result.length, hasMore: false };
  if (result && Array.isArray(result.values)) return { values: result.values.map(String), total: result.total ?? null, hasMore: Boolean(result.hasMore) };
  throw new Failed(`${what} returned something else than an array of strings or { values, total, hasMore }`);
}

/**
 * Build the `resources`, `prompts` and `completions` exports of contract 0.3
 * from `{ resources, templates, prompts }`:
 *
 * - `resources`: URI to `{ name, description, mimeType, read() }`;
 * - `templates`: URI template (`notes://day/{day}`) to `{ name,
 *   description, mimeType, read(vars), complete }`;
 * - `prompts`: name to `{ description, arguments: { NAME: { description,
 *   required } }, get(args), complete }`.
 *
 * `read` returns a string (text), bytes (a Uint8Array) or `resource()`
 * parts; `get` a string (one user message) or an array of `message()`s;
 * `complete` maps an argument (or variable) name to `(value, context) =>`
 * the values that fit `value`, best first. Checked once, at build time.
 */
export function offers({ resources = {}, templates = {}, prompts = {} } = {}) {
  const resourceInfos = Object.entries(resources).map(([uri, spec]) => offered("resource", uri, spec));
  const templateInfos = Object.entries(templates).map(([uri, spec]) => {
    const info = offered("resource template", uri, spec);
    checkComplete(`resource template ${uri}`, spec.complete);
    return { info, spec, ...templatePattern(uri) };
  });
  const promptInfos = Object.entries(prompts).map(([name, spec]) => {
    if (!NAME.test(name)) throw new Error(`prompt name ${JSON.stringify(name)} must be 1-64 characters of a-z A-Z 0-9 _ -`);
    if (spec === null || typeof spec !== "object" || typeof spec.get !== "function") throw new Error(`prompt ${name} needs a get(args) function`);
    checkComplete(`prompt ${name}`, spec.complete);
    const args = Object.entries(spec.arguments ?? {}).map(([arg, a]) => ({
      name: arg,
      description: optional(a?.description, `prompt ${name}: argument ${arg}'s description`),
      required: Boolean(a?.required),
    }));
    return { name, description: optional(spec.description, `prompt ${name}: description`), arguments: args, meta: null };
  });

  return {
    resources: {
      listResources: () => resourceInfos,
      listTemplates: () => templateInfos.map((t) => t.info),
      read(uri, vars) {
        let spec = Object.hasOwn(resources, uri) ? resources[uri] : undefined;
        let info = resourceInfos.find((r) => r.uri === uri);
        let given = {};
        if (spec === undefined) {
          for (const t of templateInfos) {
            const m = t.regex.exec(uri);
            if (m === null) continue;
            spec = t.spec;
            info = t.info;
            given = vars && vars.length ? Object.fromEntries(vars) : Object.fromEntries(t.names.map((n, i) => [n, decodeURIComponent(m[i + 1])]));
            break;
          }
        }
        if (spec === undefined) throw { tag: "not-found", val: `this plugin has no resource ${uri} and no template matches it` };
        try {
          return readParts(uri, info.mimeType, spec.read(given));
        } catch (e) {
          throw offerError(e, `resource ${uri}`);
        }
      },
    },
    prompts: {
      listPrompts: () => promptInfos,
      get(name, args) {
        const info = promptInfos.find((p) => p.name === name);
        if (info === undefined) throw { tag: "not-found", val: `this plugin has no prompt ${JSON.stringify(name)}; it has ${Object.keys(prompts).join(", ")}` };
        const given = Object.fromEntries(args);
        const missing = info.arguments.filter((a) => a.required && !Object.hasOwn(given, a.name)).map((a) => a.name);
        if (missing.length) throw { tag: "invalid-input", val: `prompt ${name} needs the argument(s) ${missing.join(", ")}` };
        const unknown = Object.keys(given).filter((k) => !info.arguments.some((a) => a.name === k));
        if (unknown.length) throw { tag: "invalid-input", val: `prompt ${name} takes no argument ${unknown.join(", ")}` };
        let result;
        try {
          result = prompts[name].get(given);
          const messages = (Array.isArray(result) ? result : [result]).map((m) => (typeof m === "string" ? message(m) : m));
          for (const m of messages) {
            if (!m || !ROLES.has(m.role) || !m.content) throw new Failed(`prompt ${name} returned something else than a string or message()s`);
          }
          return { description: info.description, messages: messages.map((m) => ({ role: m.role, content: promptPart(m.content) })) };
        } catch (e) {
          throw offerError(e, `prompt ${name}`);
        }
      },
    },
    completions: {
      complete(target, argument, value, context) {
        const owner = target.tag === "prompt" ? prompts[target.val] : templates[target.val];
        const what = `completion of ${target.tag} ${target.val} argument ${argument}`;
        const f = owner && Object.hasOwn(owner.complete ?? {}, argument) ? owner.complete[argument] : undefined;
        if (f === undefined) return { values: [], total: 0, hasMore: false };
        try {
          return completion(f(value, Object.fromEntries(context)), what);
        } catch (e) {
          throw offerError(e, what);
        }
      },
    },
  };
}
