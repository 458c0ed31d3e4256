// {{name}}: a toolhost plugin in JavaScript; greets someone by name and counts words.
//
// Build with ./build.sh, then
// toolhost call {{name}}_greet --input '{"name":"Ada"}' --plugins dist
//
// "toolhost" is the SDK module (sdk-guest/js/toolhost.js in the toolhost
// checkout; rolldown.config.mjs maps the name). The module must export the
// result of plugin({...}) as `tool`. The host validates every input against
// `input` (a JSON Schema) before `run` sees it, and every result against
// `output` when a tool declares it.
import { plugin, InvalidInput, config, progress } from "toolhost";

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
