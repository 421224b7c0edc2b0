// The benchmark client built with the TypeScript SDK, @modelcontextprotocol/sdk
// (pinned in package.json and package-lock.json), spawning the server through
// the SDK's own stdio transport, or with --transport http its Streamable HTTP
// transport (global fetch, the SDK's defaults). It mirrors
// internal/driver/driver.go: same command line, same scenarios, same checks,
// one JSON line of results; over HTTP it starts the server with --http,
// reads its URL, and reports the TCP connections the server accepted.
//
//   node client.mjs --server 'CMD ARGS…' --scenario seq|conc|blob|elicit|slow --n N [--transport stdio|http]
import { readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const CALLERS = 64;

function parseArgs(argv) {
  const cfg = { server: '', scenario: 'seq', n: 1000, era: 'legacy', size: 8 << 20, slowMs: 200, steps: 4, transport: 'stdio' };
  const names = { '--server': 'server', '--scenario': 'scenario', '--n': 'n', '--era': 'era', '--size': 'size', '--slow-ms': 'slowMs', '--steps': 'steps', '--transport': 'transport' };
  for (let i = 0; i < argv.length; i++) {
    let [flag, value] = argv[i].split(/=(.*)/s);
    if (flag.startsWith('-') && !flag.startsWith('--')) flag = '-' + flag;
    const key = names[flag];
    if (!key) throw new Error(`unknown flag ${argv[i]}`);
    if (value === undefined) value = argv[++i];
    cfg[key] = typeof cfg[key] === 'number' ? Number(value) : value;
  }
  cfg.server = cfg.server.split(/\s+/).filter(Boolean);
  return cfg;
}

function cpuMicros() {
  const u = process.cpuUsage();
  return u.user + u.system;
}

function peakRssMiB() {
  const m = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

const now = () => process.hrtime.bigint();
const micros = (ns) => Number(ns) / 1000;

async function connect(cfg) {
  if (cfg.era !== 'legacy') throw new Error(`the TypeScript SDK 1.32.2 does not speak the ${cfg.era} era`);
  const client = new Client({ name: 'bench-ts-sdk', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (req) => ({
    action: 'accept',
    content: { answer: req.params.message },
  }));
  const transport = cfg.url
    ? new StreamableHTTPClientTransport(new URL(cfg.url))
    : new StdioClientTransport({ command: cfg.server[0], args: cfg.server.slice(1), stderr: 'inherit' });
  await client.connect(transport);
  return client;
}

// startHTTPServer starts the server with --http and resolves with its URL
// (its first line) and a stop function that closes its standard input and
// resolves with the count of connections it accepted ("conns N").
function startHTTPServer(argv) {
  const child = spawn(argv[0], [...argv.slice(1), '--http'], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  const lines = [];
  let wake = null;
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d) => {
    out += d;
    let i;
    while ((i = out.indexOf('\n')) >= 0) {
      lines.push(out.slice(0, i).trim());
      out = out.slice(i + 1);
    }
    if (wake) wake();
  });
  const exited = new Promise((resolve) => child.on('close', resolve));
  child.on('close', () => wake && wake());
  const nextLine = async () => {
    while (lines.length === 0) {
      if (child.exitCode !== null) throw new Error(`${argv[0]} --http exited`);
      await new Promise((r) => (wake = r));
    }
    return lines.shift();
  };
  return nextLine().then((url) => {
    if (!url.startsWith('http://')) throw new Error(`${argv[0]} --http printed ${url}, not its URL`);
    return {
      url,
      stop: async () => {
        child.stdin.end();
        const line = await nextLine();
        await exited;
        const m = /^conns (\d+)$/.exec(line);
        if (!m) throw new Error(`server printed ${line} at exit, not "conns N"`);
        return Number(m[1]);
      },
    };
  });
}

async function call(client, name, args, options) {
  const res = await client.callTool({ name, arguments: args }, undefined, { timeout: 300000, ...options });
  if (res.isError || res.content.length !== 1 || res.content[0].type !== 'text') {
    throw new Error(`${name}: unexpected result ${JSON.stringify(res).slice(0, 200)}`);
  }
  return res.content[0].text;
}

async function echoOnce(client, i) {
  const want = 'hello-' + i;
  const got = await call(client, 'echo', { text: want });
  if (got !== want) throw new Error(`echo ${want} answered ${got}`);
}

async function askOnce(client, i) {
  const q = 'q-' + i;
  const got = await call(client, 'ask', { q });
  if (got !== 'answer:' + q) throw new Error(`ask ${q} answered ${got}`);
}

async function latency(n, res, once) {
  for (let i = 0; i < Math.max(Math.floor(n / 10), 20); i++) await once(-1 - i);
  const durations = new Array(n);
  const cpu0 = cpuMicros();
  const start = now();
  for (let i = 0; i < n; i++) {
    const t = now();
    await once(i);
    durations[i] = now() - t;
    res.ok++;
  }
  const wall = now() - start;
  const cpu = cpuMicros() - cpu0;
  durations.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  res.median_us = micros(durations[Math.floor(n / 2)]);
  res.p99_us = micros(durations[Math.min(n - 1, Math.floor((n * 99) / 100))]);
  res.wall_ms = Number(wall) / 1e6;
  res.calls_per_s = n / (Number(wall) / 1e9);
  res.cpu_us_per_call = cpu / n;
}

async function concurrent(client, n, res) {
  const run = async (total) => {
    let next = 0;
    const worker = async () => {
      while (next < total) await echoOnce(client, next++);
    };
    await Promise.all(Array.from({ length: CALLERS }, worker));
  };
  await run(Math.max(Math.floor(n / 10), CALLERS * 4));
  const cpu0 = cpuMicros();
  const start = now();
  await run(n);
  const wall = now() - start;
  res.ok = n;
  res.wall_ms = Number(wall) / 1e6;
  res.calls_per_s = n / (Number(wall) / 1e9);
  res.cpu_us_per_call = (cpuMicros() - cpu0) / n;
}

async function blob(client, cfg, res) {
  const check = async () => {
    const got = await call(client, 'blob', { n: cfg.size });
    if (got.length !== cfg.size || got[0] !== 'x' || got[got.length >> 1] !== 'x' || got[got.length - 1] !== 'x') {
      throw new Error(`blob of ${cfg.size} bytes answered ${got.length} bytes`);
    }
  };
  await check();
  const cpu0 = cpuMicros();
  const start = now();
  for (let i = 0; i < cfg.n; i++) {
    await check();
    res.ok++;
  }
  const wall = now() - start;
  res.wall_ms = Number(wall) / 1e6;
  res.mb_per_s = (cfg.n * cfg.size) / 1e6 / (Number(wall) / 1e9);
  res.cpu_us_per_call = (cpuMicros() - cpu0) / cfg.n;
}

async function slow(client, cfg, res) {
  // A warm-up call, with progress, as in internal/driver.
  const warm = await call(client, 'slow', { ms: 1, steps: 1 }, { onprogress: () => {} });
  if (warm !== 'done') throw new Error(`warm-up: slow answered ${warm}`);
  let progress = 0;
  const cpu0 = cpuMicros();
  const start = now();
  const results = await Promise.allSettled(
    Array.from({ length: cfg.n }, () =>
      call(client, 'slow', { ms: cfg.slowMs, steps: cfg.steps }, { onprogress: () => progress++ }),
    ),
  );
  const wall = now() - start;
  res.progress_at_return = progress;
  const want = cfg.n * cfg.steps;
  for (const deadline = Date.now() + 1000; progress < want && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 5));
  }
  res.ok = results.filter((r) => r.status === 'fulfilled' && r.value === 'done').length;
  res.wall_ms = Number(wall) / 1e6;
  res.slow_ms = cfg.slowMs;
  res.progress = progress;
  res.progress_want = want;
  res.cpu_us_per_call = (cpuMicros() - cpu0) / cfg.n;
  const failed = results.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
  if (res.ok !== cfg.n) throw new Error(`${cfg.n - res.ok} slow calls answered wrongly`);
  // A progress shortfall is a measured figure (progress against progress_want),
  // not a failed run, as in internal/driver.
}

async function main() {
  const cfg = parseArgs(process.argv.slice(2));
  const res = { client: 'ts-sdk', scenario: cfg.scenario, era: cfg.era, n: cfg.n, ok: 0, cpu_us_per_call: 0, wall_ms: 0, peak_rss_mib: 0 };
  let client;
  let server;
  try {
    if (cfg.server.length === 0) throw new Error('--server is required');
    if (cfg.transport === 'http') {
      res.transport = 'http';
      server = await startHTTPServer(cfg.server);
      cfg.url = server.url;
    } else if (cfg.transport !== 'stdio') {
      throw new Error(`--transport must be stdio or http, not ${cfg.transport}`);
    }
    client = await connect(cfg);
    switch (cfg.scenario) {
      case 'seq':
        await latency(cfg.n, res, (i) => echoOnce(client, i));
        break;
      case 'elicit':
        await latency(cfg.n, res, (i) => askOnce(client, i));
        break;
      case 'conc':
        await concurrent(client, cfg.n, res);
        break;
      case 'blob':
        await blob(client, cfg, res);
        break;
      case 'slow':
        await slow(client, cfg, res);
        break;
      default:
        throw new Error(`unknown scenario ${cfg.scenario}`);
    }
  } catch (err) {
    res.error = String(err && err.message ? err.message : err);
  }
  if (client) await client.close().catch(() => {});
  if (server) {
    try {
      res.conns_opened = await server.stop();
    } catch (err) {
      res.error ??= 'server: ' + String(err && err.message ? err.message : err);
    }
  }
  res.peak_rss_mib = peakRssMiB();
  process.stdout.write(JSON.stringify(res) + '\n');
  process.exit(res.error ? 1 : 0);
}

main();
