// Merged into jco's bundle step (`jco componentize --bundle --bundle-config`),
// which ./build.sh runs. The plugin and the SDK become one module.
// "toolhost" is the SDK module; build.sh sets TOOLHOST_SDK_JS to its path.
// WIT interfaces are imports of the component, not files to bundle.
const sdk = process.env.TOOLHOST_SDK_JS;
if (!sdk) {
  throw new Error("TOOLHOST_SDK_JS is not set: build with ./build.sh");
}

export default {
  external: [/^toolhost:/, /^wasi:/],
  resolve: { alias: { toolhost: sdk } },
};
