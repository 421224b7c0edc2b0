// An MCP server on the TypeScript SDK v2 (@modelcontextprotocol/server and
// @modelcontextprotocol/node, pinned by package-lock.json) over Streamable
// HTTP, for Snodo's interop tests (internal/interop/tsv2_test.go), in both
// protocol eras, the way the SDK's own dual-era examples serve them:
//
//   - 2026-07-28: createMcpHandler, one server instance per request; input
//     is asked with inputRequired results, list changes are published on
//     the handler's event bus (subscriptions/listen);
//   - 2025-era (initialize): a session per client
//     (NodeStreamableHTTPServerTransport), where input is asked with a
//     server request (elicitation/create) on the call's SSE stream and list
//     changes are notifications/tools/list_changed.
//
// Tools: ask (elicits a name), count (reports progress), grow (enables the
// tool extra and announces that the tool list changed), extra.
//
// It listens on 127.0.0.1, on the port given as its first argument (0: any
// free one), and prints "listening URL" on stdout once it does.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

import {
    localhostHostValidation,
    localhostOriginValidation,
    NodeStreamableHTTPServerTransport,
    toNodeHandler,
    toWebRequest
} from '@modelcontextprotocol/node';
import { acceptedContent, createMcpHandler, inputRequired, isInitializeRequest, isLegacyRequest, McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod/v4';

const NAME_SCHEMA = {
    type: 'object',
    properties: { name: { type: 'string', title: 'Name' } },
    required: ['name']
};

// extraEnabled is shared by every server instance: grow enables the tool.
let extraEnabled = false;
// legacyServers are the servers of the open 2025-era sessions, told of list
// changes; publish tells the 2026-07-28 subscriptions.
const legacyServers = new Set();
let publish = () => {};

function buildServer(reqCtx) {
    const server = new McpServer(
        { name: 'interop-tsv2', version: '2.4.0' },
        { capabilities: { tools: { listChanged: true }, logging: {} }, instructions: 'Interop server for Snodo (TypeScript SDK v2).' }
    );

    server.registerTool('ask', { description: 'Elicits a name.' }, async ctx => {
        if (reqCtx.era === 'legacy') {
            const result = await ctx.mcpReq.elicitInput({ mode: 'form', message: 'Your name?', requestedSchema: NAME_SCHEMA });
            if (result.action !== 'accept' || !result.content) {
                return { content: [{ type: 'text', text: `no name (${result.action})` }] };
            }
            return { content: [{ type: 'text', text: `hello ${result.content.name} (accept)` }] };
        }
        const response = ctx.mcpReq.inputResponses?.['name'];
        if (!response) {
            return inputRequired({
                inputRequests: { name: inputRequired.elicit({ message: 'Your name?', requestedSchema: NAME_SCHEMA }) }
            });
        }
        const form = acceptedContent(ctx.mcpReq.inputResponses, 'name');
        if (!form) {
            return { content: [{ type: 'text', text: `no name (${response.action})` }] };
        }
        return { content: [{ type: 'text', text: `hello ${form.name} (accept)` }] };
    });

    server.registerTool(
        'count',
        {
            description: 'Counts, reporting progress.',
            inputSchema: z.object({ steps: z.number().int().min(1).max(100), delay_ms: z.number().int().min(0).max(1000).default(0) })
        },
        async ({ steps, delay_ms }, ctx) => {
            const progressToken = ctx.mcpReq._meta?.progressToken;
            for (let i = 1; i <= steps; i++) {
                if (ctx.mcpReq.signal.aborted) break;
                await new Promise(r => setTimeout(r, delay_ms));
                if (progressToken !== undefined) {
                    await ctx.mcpReq.notify({
                        method: 'notifications/progress',
                        params: { progressToken, progress: i, total: steps, message: `step ${i}` }
                    });
                }
            }
            return { content: [{ type: 'text', text: `counted to ${steps}` }] };
        }
    );

    const extra = server.registerTool('extra', { description: 'Enabled by grow.' }, async () => ({
        content: [{ type: 'text', text: 'extra' }]
    }));
    if (!extraEnabled) extra.disable();

    server.registerTool('grow', { description: 'Enables the tool extra; the tool list changes.' }, async () => {
        extraEnabled = true;
        extra.enable();
        publish();
        for (const s of legacyServers) {
            if (s !== server) s.sendToolListChanged();
        }
        return { content: [{ type: 'text', text: 'added extra' }] };
    });

    return server;
}

// 2026-07-28: per request; every legacy request goes to the sessions below.
const handler = createMcpHandler(buildServer, { legacy: 'reject' });
publish = () => handler.notify.toolsChanged();
const modern = toNodeHandler(handler);

// 2025-era: a session per client.
const sessions = new Map();
async function handleLegacy(req, res, body) {
    const sid = req.headers['mcp-session-id'];
    if (sid && sessions.has(sid)) {
        await sessions.get(sid).handleRequest(req, res, body);
        return;
    }
    if (!sid && isInitializeRequest(body)) {
        const server = buildServer({ era: 'legacy' });
        const t = new NodeStreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: id => {
                sessions.set(id, t);
                legacyServers.add(server);
            }
        });
        t.onclose = () => {
            if (t.sessionId) sessions.delete(t.sessionId);
            legacyServers.delete(server);
        };
        await server.connect(t);
        await t.handleRequest(req, res, body);
        return;
    }
    res.writeHead(sid ? 404 : 400, { 'content-type': 'application/json' }).end(
        JSON.stringify({
            jsonrpc: '2.0',
            error: sid ? { code: -32001, message: 'Session not found' } : { code: -32000, message: 'Bad Request: Session ID required' },
            id: null
        })
    );
}

const validateHost = localhostHostValidation();
const validateOrigin = localhostOriginValidation();
const httpServer = createServer((req, res) => {
    if (!validateHost(req, res) || !validateOrigin(req, res)) return;
    void (async () => {
        const request = await toWebRequest(req);
        const legacy = await isLegacyRequest(request);
        const body = req.method === 'POST' ? await request.json().catch(() => {}) : undefined;
        await (legacy ? handleLegacy(req, res, body) : modern(req, res, body));
    })().catch(error => {
        console.error('[tsv2] request error:', error instanceof Error ? error.message : error);
        if (!res.headersSent) res.writeHead(500).end();
    });
});
httpServer.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
    console.log(`listening http://127.0.0.1:${httpServer.address().port}/mcp`);
});
// The test closes stdin to stop the server.
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
