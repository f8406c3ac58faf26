// Drive this service's MCP server with the official MCP TypeScript SDK.
//
//   node client.mjs http <url> <token> <session_id>
//   node client.mjs stdio <openprogram exe> <state dir> <session_id>
//
// Prints one JSON object: what the calls answered (tests/api/mcp.rs checks it).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [mode, where, extra, sid] = process.argv.slice(2);
const transport =
  mode === "http"
    ? new StreamableHTTPClientTransport(new URL(where), {
        requestInit: { headers: { Authorization: `Bearer ${extra}` } },
      })
    : new StdioClientTransport({
        command: where,
        args: ["mcp"],
        env: { OPENPROGRAM_STATE_DIR: extra, PATH: "/usr/bin:/bin" },
      });
const client = new Client({ name: "openprogram-ts-test", version: "1.0.0" });
await client.connect(transport);
const out = { server: client.getServerVersion()?.name };
const tools = (await client.listTools()).tools;
out.tools = tools.map((t) => t.name);
out.read_only = tools.every((t) => t.annotations?.readOnlyHint === true);
out.schemas = tools.every((t) => t.inputSchema?.type === "object");
const call = async (name, args) => {
  const r = await client.callTool({ name, arguments: args });
  return { error: !!r.isError, data: r.structuredContent ?? null };
};
out.sessions_search = await call("sessions_search", { query: "parser" });
out.search = await call("search", { query: "parser" });
const first = out.search.data?.results?.[0]?.id ?? "";
out.fetch = await call("fetch", { id: first });
out.sessions_list = await call("sessions_list", { limit: 5 });
out.session_get = await call("session_get", { session_id: sid, format: "markdown" });
out.turn_get = await call("turn_get", { session_id: sid, turn: 1 });
out.recent_activity = await call("recent_activity", { since: 0 });
const hostile = {};
const tries = {
  unknown_tool: ["no_such_tool", {}],
  wrong_type: ["sessions_search", { query: 5 }],
  huge_limit: ["sessions_list", { limit: 1e15 }],
  missing: ["turn_get", {}],
  no_session: ["session_get", { session_id: "../../etc" }],
  bad_cursor: ["sessions_list", { cursor: "zzz" }],
};
for (const [label, [name, args]] of Object.entries(tries)) {
  try {
    const r = await client.callTool({ name, arguments: args });
    hostile[label] = r.isError ? "error" : "answered";
  } catch (e) {
    hostile[label] = "mcp_error:" + (e?.constructor?.name ?? "Error");
  }
}
out.hostile = hostile;
out.after = await call("sessions_list", { limit: 1 });
console.log(JSON.stringify(out));
await client.close();
