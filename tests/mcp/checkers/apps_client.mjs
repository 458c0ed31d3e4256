// The official TypeScript SDK 2 client (@modelcontextprotocol/client),
// with the MCP Apps extension's own constants (@modelcontextprotocol/ext-apps),
// both locked in package-lock.json, against `toolhost serve`, for
// tests/all/mcp/apps.rs. Usage:
//
//   node apps_client.mjs stdio|http TARGET apps|offers [2025|2026]
//
// TARGET is the command line of the server (stdio, a JSON list) or its URL
// (http). The revision is 2025-11-25 (the default, `initialize`) or the
// sessionless 2026-07-28 (`server/discover`, pinned).
//
// `apps`: declares the Apps extension (`io.modelcontextprotocol/ui`), lists
// the tools and picks those whose `_meta` names a UI resource the way
// hosts read it (`ui.resourceUri`, else the legacy `ui/resourceUri`), lists
// the resources and reads each UI resource. No browser installs from the
// registries here, so the HTML is not rendered in an iframe: its MIME type
// and text are reported for the test to check.
//
// `offers`: lists resources, templates and prompts, reads a text, a blob
// and a templated resource and an unknown URI, gets a prompt with
// arguments (and without its required ones), and completes a prompt's
// argument and a template's variable.
//
// Prints one JSON report on stdout.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { RESOURCE_MIME_TYPE, RESOURCE_URI_META_KEY } from "@modelcontextprotocol/ext-apps";
import { EXTENSION_ID } from "@modelcontextprotocol/ext-apps/server";

const [transportName, target, mode, revision = "2025"] = process.argv.slice(2);
let transport;
if (transportName === "stdio") {
  const [command, ...args] = JSON.parse(target);
  transport = new StdioClientTransport({ command, args, stderr: "inherit" });
} else {
  transport = new StreamableHTTPClientTransport(new URL(target));
}
const client = new Client(
  { name: "toolhost-apps-test", version: "0" },
  {
    capabilities: { extensions: { [EXTENSION_ID]: { mimeTypes: [RESOURCE_MIME_TYPE] } } },
    ...(revision === "2026" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {}),
  },
);
await client.connect(transport);
const report = {
  protocol_version: client.getNegotiatedProtocolVersion() ?? null,
  ext_apps: { RESOURCE_MIME_TYPE, RESOURCE_URI_META_KEY, EXTENSION_ID },
};
// What a JSON-RPC error says, for the report.
const failure = (e) => ({ code: e.code ?? null, message: String(e.message ?? e), data: e.data ?? null });

try {
  if (mode === "apps") {
    const { tools } = await client.listTools();
    report.tools = tools.length;
    report.apps = {};
    for (const tool of tools) {
      // How the extension tells hosts to find a tool's UI.
      const uri = tool._meta?.ui?.resourceUri ?? tool._meta?.[RESOURCE_URI_META_KEY];
      if (typeof uri === "string" && uri.startsWith("ui://")) {
        report.apps[tool.name] = { meta: tool._meta };
      }
    }
    const { resources } = await client.listResources();
    report.ui_resources = resources
      .filter((r) => r.uri.startsWith("ui://"))
      .map((r) => ({ uri: r.uri, mimeType: r.mimeType ?? null, name: r.name }));
    for (const [name, app] of Object.entries(report.apps)) {
      const read = await client.readResource({ uri: app.meta.ui.resourceUri });
      app.contents = read.contents.map((c) => ({
        uri: c.uri,
        mimeType: c.mimeType ?? null,
        text: c.text ?? null,
        blob: c.blob ?? null,
      }));
      app.name = name;
    }
  } else {
    report.capabilities = client.getServerCapabilities() ?? null;
    report.resources = (await client.listResources()).resources.map((r) => r.uri);
    report.templates = (await client.listResourceTemplates()).resourceTemplates.map(
      (t) => t.uriTemplate,
    );
    report.prompts = (await client.listPrompts()).prompts.map((p) => ({
      name: p.name,
      arguments: (p.arguments ?? []).map((a) => [a.name, a.required ?? false]),
    }));
    report.read_text = (await client.readResource({ uri: "test://static-text" })).contents;
    report.read_blob = (await client.readResource({ uri: "test://static-binary" })).contents;
    report.read_template = (await client.readResource({ uri: "test://template/42/data" })).contents;
    report.unknown = await client
      .readResource({ uri: "test://no/such/thing" })
      .then(() => null, failure);
    const got = await client.getPrompt({
      name: "test_prompt_with_arguments",
      arguments: { arg1: "Warsaw", arg2: "Mazovia" },
    });
    report.prompt = got.messages.map((m) => ({ role: m.role, type: m.content.type, text: m.content.text }));
    report.prompt_missing = await client
      .getPrompt({ name: "test_prompt_with_arguments", arguments: {} })
      .then(() => null, failure);
    report.completion = (
      await client.complete({
        ref: { type: "ref/prompt", name: "test_prompt_with_arguments" },
        argument: { name: "arg1", value: "testV" },
      })
    ).completion.values;
    report.template_completion = (
      await client.complete({
        ref: { type: "ref/resource", uri: "test://template/{id}/data" },
        argument: { name: "id", value: "4" },
      })
    ).completion.values;
  }
} finally {
  await client.close();
}
console.log(JSON.stringify(report));
