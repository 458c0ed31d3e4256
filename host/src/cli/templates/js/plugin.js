// {{name}}: a toolhost plugin in JavaScript; greets someone by name.
//
// Build with ./build.sh, then
// toolhost call {{name}}_greet --input '{"name":"Ada"}' --plugins dist
//
// "toolhost" is the SDK module (sdk-guest/js/toolhost.js in the toolhost
// checkout; rolldown.config.mjs maps the name). The module must export the
// result of plugin({...}) as `tool`. The host validates every input against
// `input` (a JSON Schema) before `run` sees it.
import { plugin, InvalidInput, config } from "toolhost";

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
    run({ name }) {
      const who = name.trim();
      if (who === "") throw new InvalidInput("`name` must not be blank");
      const greeting = config("greeting") ?? "Hello";
      return { greeting: `${greeting}, ${who}!` };
    },
  },
});
