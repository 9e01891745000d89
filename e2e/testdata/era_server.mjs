// A real 2026-07-28 upstream for the era tests: the pinned TypeScript SDK
// 2.0.0, which serves both eras over stdio and picks by how it is opened.
// It logs the era of each request to stderr ("era=<era> method=<m>").
import { McpServer, inputRequired, acceptedContent } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod/v4';

serveStdio(({ era }) => {
  process.stderr.write(`era=${era}\n`);
  const server = new McpServer({ name: 'era-server', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.registerTool('echo', { description: 'Echoes its text.', inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: 'text', text: `${era}:${text}` }] }));
  // confirm asks the user through an input-required round (at 2026-07-28)
  // and says what they answered.
  server.registerTool('confirm', { description: 'Asks the user to confirm.', inputSchema: z.object({}) },
    async (_args, ctx) => {
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm');
      if (answer === undefined && ctx.mcpReq.inputResponses === undefined) {
        return inputRequired({
          inputRequests: {
            confirm: inputRequired.elicit({
              message: 'Proceed with the deployment?',
              requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] },
            }),
          },
          requestState: 'upstream-state-1',
        });
      }
      const state = ctx.mcpReq.requestState ? String(ctx.mcpReq.requestState()) : '';
      return { content: [{ type: 'text', text: `confirm=${answer ? answer.confirm : 'declined'} state=${state}` }] };
    });
  return server;
});
