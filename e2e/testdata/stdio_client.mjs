// A host built on the TypeScript SDK, over stdio: it starts the command
// given, calls each tool in turn with empty arguments, and prints one JSON
// line: {"calls":[{"name":N,"result":R} or {"name":N,"error":E}],"closed":B},
// closed saying whether the SDK's transport ended the connection.
// Usage: node stdio_client.mjs CONFIG_JSON, the config being
// {"command":C,"args":[...],"env":{...},"tools":[names]}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const cfg = JSON.parse(process.argv[2]);
const transport = new StdioClientTransport({ command: cfg.command, args: cfg.args, env: cfg.env, stderr: "ignore" });
let closed = false;
const client = new Client({ name: "ts-stdio-host", version: "1.0.0" });
client.onclose = () => { closed = true; };
await client.connect(transport);
const calls = [];
for (const name of cfg.tools) {
  try {
    const result = await client.callTool({ name, arguments: {} }, undefined, { timeout: 60000 });
    calls.push({ name, result: { isError: result.isError === true, bytes: JSON.stringify(result).length, text: JSON.stringify(result).slice(0, 300) } });
  } catch (e) {
    calls.push({ name, error: String(e && e.message || e).slice(0, 300) });
  }
}
console.log(JSON.stringify({ calls, closed }));
await client.close().catch(() => {});
