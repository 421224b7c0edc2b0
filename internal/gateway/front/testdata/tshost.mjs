// A host on the TypeScript SDK's Client over Streamable HTTP: it lists the
// gateway's tools, calls demo__echo with a progress handler, and prints
// each result as one JSON line. Run: node tshost.mjs URL TOKEN, with
// TS_SDK_DIR naming @modelcontextprotocol/sdk.
const sdk = process.env.TS_SDK_DIR;
const { Client } = await import(sdk + "/dist/esm/client/index.js");
const { StreamableHTTPClientTransport } = await import(sdk + "/dist/esm/client/streamableHttp.js");
const [url, token] = process.argv.slice(2);
const client = new Client({ name: "ts-host", version: "1.0.0" }, { capabilities: {} });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: "Bearer " + token } },
});
await client.connect(transport);
console.log(JSON.stringify({ event: "connected", session: transport.sessionId }));
const tools = await client.listTools();
console.log(JSON.stringify({ event: "tools", names: tools.tools.map((t) => t.name) }));
const progress = [];
const res = await client.callTool({ name: "demo__progress", arguments: {} }, undefined, {
  onprogress: (p) => progress.push(p.progress),
});
console.log(JSON.stringify({ event: "called", text: res.content[0].text, progress }));
const echo = await client.callTool({ name: "demo__echo", arguments: { n: 3 } });
console.log(JSON.stringify({ event: "echo", text: echo.content[0].text }));
await transport.terminateSession();
await client.close();
