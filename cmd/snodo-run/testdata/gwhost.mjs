// A host on the TypeScript SDK's Client over Streamable HTTP, driven line by
// line: each line on stdin is one command, answered by one JSON line on
// stdout.
//
//   {"token": T, "op": "list"}                      {"names": [...]}   every page of tools/list
//   {"token": T, "op": "call", "name": N, "arguments": A}
//                                                   {"result": R} or {"error": {"code", "message"}}
//   {"token": T, "op": "elicitations"}              {"messages": [...]} the elicitations it answered
//   {"op": "close"}                                 {"closed": true}, then it exits
//
// One client (one legacy session) per bearer token T, connected at its
// first command; each declares the elicitation capability and accepts every
// form with {"name": "ts-host " + T, "check": true}.
// Run: node gwhost.mjs URL, with TS_SDK_DIR naming @modelcontextprotocol/sdk.
import readline from "node:readline";

const sdk = process.env.TS_SDK_DIR;
const { Client } = await import(sdk + "/dist/esm/client/index.js");
const { StreamableHTTPClientTransport } = await import(sdk + "/dist/esm/client/streamableHttp.js");
const { ElicitRequestSchema } = await import(sdk + "/dist/esm/types.js");
const url = new URL(process.argv[2]);

const clients = new Map();

async function client(token) {
  let c = clients.get(token);
  if (c) return c;
  const elicited = [];
  const client = new Client({ name: "ts-host", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    elicited.push(req.params.message);
    return { action: "accept", content: { name: "ts-host " + token, check: true } };
  });
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: "Bearer " + token } },
  });
  await client.connect(transport);
  c = { client, transport, elicited };
  clients.set(token, c);
  return c;
}

async function run(cmd) {
  if (cmd.op === "close") {
    for (const c of clients.values()) {
      await c.transport.terminateSession();
      await c.client.close();
    }
    return { closed: true };
  }
  const c = await client(cmd.token);
  switch (cmd.op) {
    case "list": {
      const names = [];
      let cursor;
      do {
        const page = await c.client.listTools(cursor ? { cursor } : {});
        names.push(...page.tools.map((t) => t.name));
        cursor = page.nextCursor;
      } while (cursor);
      return { names };
    }
    case "call":
      return { result: await c.client.callTool({ name: cmd.name, arguments: cmd.arguments ?? {} }) };
    case "elicitations":
      return { messages: c.elicited };
  }
  throw new Error("unknown op " + cmd.op);
}

const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  const cmd = JSON.parse(line);
  let out;
  try {
    out = await run(cmd);
  } catch (e) {
    out = { error: { code: e.code ?? 0, message: String(e.message ?? e) } };
  }
  console.log(JSON.stringify(out));
  if (cmd.op === "close") break;
}
process.exit(0);
