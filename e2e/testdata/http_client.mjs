// A host built on the TypeScript SDK, over Streamable HTTP: it connects to
// the URL given, lists the tools, calls the one named with the arguments
// given (JSON), and prints {"tools":[names],"result":<the call's result>}.
// Usage: node http_client.mjs URL TOOL ARGS_JSON [BEARER]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, tool, args, bearer] = process.argv.slice(2);
const headers = bearer ? { Authorization: `Bearer ${bearer}` } : {};
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: "ts-e2e-host", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const result = await client.callTool({ name: tool, arguments: JSON.parse(args) });
console.log(JSON.stringify({ tools: tools.map((t) => t.name), result, session: transport.sessionId }));
await transport.terminateSession();
await client.close();
