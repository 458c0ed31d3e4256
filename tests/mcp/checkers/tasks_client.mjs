// The official Tasks client (@modelcontextprotocol/ext-tasks 0.2, on the
// TypeScript SDK 2's Client, both locked in package-lock.json) against `toolhost serve`, for
// tests/all/mcp/tasks.rs. Usage:
//
//   node tasks_client.mjs stdio|http TARGET
//
// TARGET is the command line of the server (stdio) or its URL (http). It
// calls `hostile_sleep` as a task twice: once to its result (1.5 s, in 3
// steps, each update it sees recorded), once for 60 s, cancelled as soon
// as the task is seen working; then `hostile_ask` as a task, whose question
// reaches the session's input handler (the client declares form
// elicitation) and is answered. Prints one JSON report on stdout.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import {
  createTaskSessionFromClient,
  resultFromTaskOutcome,
} from "@modelcontextprotocol/ext-tasks/client";

const [transportName, target] = process.argv.slice(2);
const transport =
  transportName === "stdio"
    ? new StdioClientTransport({
        command: target.split(" ")[0],
        args: target.split(" ").slice(1),
        stderr: "inherit",
      })
    : new StreamableHTTPClientTransport(new URL(target));
const client = new Client(
  { name: "toolhost-tasks-test", version: "0" },
  { capabilities: { elicitation: { form: {} } } },
);
await client.connect(transport);
const report = {
  protocol_version: client.getNegotiatedProtocolVersion() ?? null,
  server_tasks: client.getServerCapabilities()?.tasks ?? null,
};
const listed = await client.listTools();
report.execution = Object.fromEntries(
  listed.tools.map((t) => [t.name, t.execution?.taskSupport ?? null]),
);
const session = createTaskSessionFromClient(client, {
  endpointId: "toolhost-test",
  // A task's question: which task it came for, and the answer.
  onInputRequest: async (request, context) => {
    report.input = {
      kind: request.kind,
      scope: context.scope,
      delivery: context.delivery,
      task_id: context.taskId ?? null,
      message: request.params?.message ?? null,
    };
    return { action: "accept", content: { name: "Ada", count: 2 } };
  },
  onError: (error) => {
    (report.errors ??= []).push(String(error));
  },
});
try {
  // To its result, watching its updates.
  const run = await session.callTool(
    "hostile_sleep",
    { ms: 1500, steps: 3 },
    { task: { preference: "require" } },
  );
  report.kind = run.kind;
  const seen = [];
  const { outcome } = await run.settle({
    onEvent: (event) => {
      if (event.type === "task") {
        seen.push({ status: event.task.status, message: event.task.statusMessage ?? null });
      }
    },
  });
  report.updates = seen;
  report.outcome = outcome.status;
  report.result = resultFromTaskOutcome(outcome);

  // Cancelled while it runs.
  const long = await session.callTool(
    "hostile_sleep",
    { ms: 60000 },
    { task: { preference: "require" } },
  );
  const started = Date.now();
  await long.cancel();
  const cancelled = await long.result().catch((e) => ({ status: `threw: ${e}` }));
  report.cancelled = { status: cancelled.status, ms: Date.now() - started };

  // A task that asks its user.
  const asking = await session.callTool(
    "hostile_ask",
    { then_sleep_ms: 10 },
    { task: { preference: "require" } },
  );
  const statuses = [];
  const ids = new Set();
  const asked = await asking.settle({
    onEvent: (event) => {
      if (event.type === "task") {
        statuses.push(event.task.status);
        ids.add(event.task.taskId);
      }
    },
  });
  report.asked = {
    task_ids: [...ids],
    statuses,
    outcome: asked.outcome.status,
    result: resultFromTaskOutcome(asked.outcome),
  };
} finally {
  await session.close();
  await client.close();
}
console.log(JSON.stringify(report));
