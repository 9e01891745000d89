// A real 2026-07-28 upstream for the era tests: the pinned TypeScript SDK
// 2.0.0, which serves both eras over stdio and picks by how it is opened.
// It logs the era of each request to stderr ("era=<era> method=<m>").
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod/v4';

serveStdio(({ era }) => {
  process.stderr.write(`era=${era}\n`);
  const server = new McpServer({ name: 'era-server', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.registerTool('echo', { description: 'Echoes its text.', inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: 'text', text: `${era}:${text}` }] }));
  return server;
});
