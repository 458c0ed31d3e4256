// {{name}}: a toolhost plugin in JavaScript; greets someone by name and counts
// words, and offers a resource, a resource template, a prompt and its completions.
//
// Build with ./build.sh, then
// toolhost call {{name}}_greet --input '{"name":"Ada"}' --plugins dist
//
// "toolhost" is the SDK module (sdk-guest/js/toolhost.js in the toolhost
// checkout; rolldown.config.mjs maps the name). The module must export the
// result of plugin({...}) as `tool`. The host validates every input against
// `input` (a JSON Schema) before `run` sees it, and every result against
// `output` when a tool declares it.
//
// Besides tools it offers (contract 0.3, the `offers({...})` export at the
// end) a resource, a resource template, a prompt and completions of the
// prompt's argument: `toolhost resources --plugins dist` lists them.
import { plugin, offers, InvalidInput, config, progress } from "toolhost";

export const tool = plugin({
  {{name}}_greet: {
    description: "Greet someone by name.",
    input: {
      type: "object",
      properties: {
        name: { type: "string", description: "Who to greet." },
      },
      required: ["name"],
      additionalProperties: false,
    },
    output: {
      type: "object",
      properties: { greeting: { type: "string", description: 'The greeting, e.g. "Hello, Ada!".' } },
      required: ["greeting"],
    },
    annotations: { title: "Greet someone", readOnly: true },
    run({ name }) {
      const who = name.trim();
      if (who === "") throw new InvalidInput("`name` must not be blank");
      const greeting = config("greeting") ?? "Hello";
      return { greeting: `${greeting}, ${who}!` };
    },
  },
  {{name}}_count: {
    description: "Count the lines and words of a text.",
    input: {
      type: "object",
      properties: { text: { type: "string", description: "The text to count." } },
      required: ["text"],
      additionalProperties: false,
    },
    output: {
      type: "object",
      properties: { lines: { type: "integer" }, words: { type: "integer" } },
      required: ["lines", "words"],
    },
    run({ text }) {
      // Lines as Python's splitlines() counts them: no empty last line.
      const lines = text === "" ? [] : text.replace(/\r?\n$/, "").split(/\r?\n/);
      let words = 0;
      lines.forEach((line, i) => {
        words += line.split(/\s+/).filter(Boolean).length;
        // A long job says how far it is; the host thins out reports that
        // come too fast, so report as often as is natural.
        if ((i + 1) % 1000 === 0 || i + 1 === lines.length) {
          progress.report(i + 1, lines.length, `counted ${i + 1} of ${lines.length} lines`);
        }
      });
      // To return an image beside the JSON: `return new Output({ lines, words }, [image(pngBytes)])`.
      // To ask the person behind the call: `user.ask("Which one?", { type: "object", properties: {...} })`.
      return { lines: lines.length, words };
    },
  },
});

// What the plugin offers besides tools. A URI's scheme is the plugin's name
// with `_` as `-`: the host gives each plugin its own. Drop any of these you
// do not need (`read` may also return bytes or resource() parts, `get` an
// array of message()s with images).
export const { resources, prompts, completions } = offers({
  resources: {
    "{{scheme}}://about": {
      name: "about",
      description: "What the {{name}} plugin does.",
      mimeType: "text/markdown",
      read: () => "# {{name}}\n\nA toolhost plugin: `{{name}}_greet` greets someone, `{{name}}_count` counts words.\n",
    },
  },
  templates: {
    "{{scheme}}://greeting/{name}": {
      name: "greeting",
      description: "The greeting for someone, as {{name}}_greet says it.",
      mimeType: "text/plain",
      read: ({ name }) => `${config("greeting") ?? "Hello"}, ${name}!`,
    },
  },
  prompts: {
    {{name}}_welcome: {
      description: "Ask the model to welcome someone.",
      arguments: { name: { description: "Who to welcome.", required: true } },
      // One user message; return an array of message(...)s for more.
      get: ({ name }) => `Write a short, warm welcome for ${name}, a new member of the team.`,
      // The names that start with what the user typed so far.
      complete: { name: (value) => ["Ada", "Alan", "Grace"].filter((n) => n.startsWith(value)) },
    },
  },
});
