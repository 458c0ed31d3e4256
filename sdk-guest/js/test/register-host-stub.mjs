// `node --import ./register-host-stub.mjs`: resolve the WIT import to the stub.
import { register } from "node:module";

register(
  "data:text/javascript," +
    encodeURIComponent(`
      export async function resolve(specifier, context, next) {
        if (specifier === "toolhost:plugin/host@0.1.0") {
          return { url: new URL("./host-stub.mjs", ${JSON.stringify(import.meta.url)}).href, shortCircuit: true };
        }
        return next(specifier, context);
      }`),
);
