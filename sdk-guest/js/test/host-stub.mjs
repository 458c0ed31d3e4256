// Stands in for the `toolhost:plugin/host@0.1.0` import when the SDK runs
// under plain Node.js (tests). Records log lines; config reads `globalThis.toolhostConfig`.
export const logs = [];
export function log(level, message) {
  logs.push([level, message]);
}
export function config(key) {
  const values = globalThis.toolhostConfig ?? {};
  return Object.hasOwn(values, key) ? values[key] : undefined;
}
