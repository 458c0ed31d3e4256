// `node --import ./register-host-stub.mjs`: resolve the WIT imports to the stub.
import { register } from "node:module";

register(
  "data:text/javascript," +
    encodeURIComponent(`
      export async function resolve(specifier, context, next) {
        if (/^toolhost:plugin\\/(host|progress|user)@0\\.2\\.0$/.test(specifier)) {
          return { url: new URL("./host-stub.mjs", ${JSON.stringify(import.meta.url)}).href, shortCircuit: true };
        }
        return next(specifier, context);
      }`),
);
