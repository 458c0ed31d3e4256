// Merged into jco's bundle step (`jco componentize --bundle --bundle-config`):
// WIT interfaces are imports of the component, not files to bundle.
export default { external: [/^toolhost:/, /^wasi:/] };
