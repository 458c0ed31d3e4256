// Stands in for the `toolhost:plugin/{host,progress,user}@0.2.0` imports when
// the SDK runs under plain Node.js (tests). Records log lines and progress
// reports; config reads `globalThis.toolhostConfig`; `ask` answers with
// `globalThis.toolhostAsk(message, schema)`, or throws the `unavailable`
// variant as the QuickJS bindings do.
export const logs = [];
export const reports = [];
export function log(level, message) {
  logs.push([level, message]);
}
export function config(key) {
  const values = globalThis.toolhostConfig ?? {};
  return Object.hasOwn(values, key) ? values[key] : undefined;
}
export function report(done, total, message) {
  reports.push([done, total, message]);
}
export function ask(message, schema) {
  if (globalThis.toolhostAsk) return globalThis.toolhostAsk(message, schema);
  throw { tag: "unavailable", val: "no one to ask in this test" };
}
