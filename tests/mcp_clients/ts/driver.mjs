// Drives the official MCP TypeScript SDK v1 client (@modelcontextprotocol/sdk, pinned in
// package.json / package-lock.json) against an MCP server over Streamable HTTP.
//
// Speaks the line protocol of tests/mcp_clients/README.md on stdin/stdout; stderr carries logs.
// Configuration (environment; the first two may also be given as argv[2] and argv[3]):
//   MCP_URL               the endpoint, e.g. http://127.0.0.1:8080/mcp
//   MCP_TOKEN             sent as `Authorization: Bearer <token>` on every HTTP request, through the
//                         SDK's documented way: StreamableHTTPClientTransport's requestInit.headers
//   MCP_PROTOCOL_VERSION  optional: connect at exactly this revision or answer ready:false (SDK v1
//                         always offers LATEST_PROTOCOL_VERSION, so only that one can be pinned)
//   MCP_NEGOTIATION       optional: only "legacy" (v1 has no other negotiation)
import { createInterface } from 'node:readline';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION, McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const SDK_VERSION = JSON.parse(
  readFileSync(new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url), 'utf8'),
).version;
const SDK_NAME = `@modelcontextprotocol/sdk ${SDK_VERSION}`;
const REQUEST_TIMEOUT_MS = 60_000;
const TOOL_KEYS = ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations', '_meta'];

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const log = (...args) => console.error('driver.mjs (ts v1):', ...args);
// Anything the SDK would print goes to stderr, never into the line protocol.
console.log = console.info = console.debug = console.warn = (...args) => console.error(...args);

const toolJson = (tool) => Object.fromEntries(TOOL_KEYS.map((k) => [k, tool[k] ?? null]));
const resultJson = (r) => ({
  result: { content: r.content ?? [], structuredContent: r.structuredContent ?? null, isError: r.isError === true },
});
function errorJson(err) {
  if (err instanceof McpError) {
    // McpError prefixes its message with "MCP error <code>: "; report the server's own text.
    const message = String(err.message).replace(/^MCP error -?\d+: /, '');
    const out = { code: err.code, message };
    if (err.data !== undefined) out.data = err.data;
    return { error: out };
  }
  const out = { code: null, message: `${err?.name ?? 'Error'}: ${err?.message ?? String(err)}` };
  if (err instanceof StreamableHTTPError && err.code > 0) out.http_status = err.code;
  return { error: out };
}

// notifications/tools/list_changed, counted through the SDK's notification handler.
const changes = {
  count: 0,
  waiters: [],
  bump() {
    this.count += 1;
    for (const wake of this.waiters.splice(0)) wake();
  },
  take() {
    const n = this.count;
    this.count = 0;
    return n;
  },
  async wait(timeoutMs) {
    if (this.count === 0) {
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, timeoutMs));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.take();
  },
};

async function connect(url, token) {
  const pinned = process.env.MCP_PROTOCOL_VERSION || undefined;
  const negotiation = process.env.MCP_NEGOTIATION || undefined;
  if (negotiation !== undefined && negotiation !== 'legacy') {
    throw new Error(`${SDK_NAME} only has the initialize handshake (MCP_NEGOTIATION=legacy)`);
  }
  if (pinned !== undefined && pinned !== LATEST_PROTOCOL_VERSION) {
    throw new Error(`${SDK_NAME} always offers ${LATEST_PROTOCOL_VERSION} in initialize; it cannot pin ${pinned}`);
  }
  const client = new Client({ name: 'toolgate-test-driver-ts', version: SDK_VERSION });
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => changes.bump());
  client.onerror = (err) => log('client error:', err?.message ?? err);
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
  const negotiated = client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion;
  if (pinned !== undefined && negotiated !== pinned) {
    await client.close().catch(() => {});
    throw new Error(`negotiated ${negotiated}, not the pinned ${pinned}`);
  }
  return { client, transport, negotiated };
}

async function listPage(client, cursor) {
  const page = await client.listTools(cursor == null ? undefined : { cursor }, { timeout: REQUEST_TIMEOUT_MS });
  return [page.tools ?? [], page.nextCursor ?? null];
}

async function answer(client, cmd) {
  switch (cmd.op) {
    case 'list': {
      const tools = [];
      let cursor = null;
      for (let i = 0; i < 10_000; i++) {
        const [page, next] = await listPage(client, cursor);
        tools.push(...page);
        if (next === null) return { tools: tools.map(toolJson) };
        cursor = next;
      }
      throw new Error('tools/list did not end after 10000 pages');
    }
    case 'list_page': {
      const [page, next] = await listPage(client, cmd.cursor ?? null);
      return { tools: page.map(toolJson), next_cursor: next };
    }
    case 'call':
      return resultJson(
        await client.callTool({ name: cmd.name, arguments: cmd.arguments ?? {} }, undefined, {
          timeout: REQUEST_TIMEOUT_MS,
        }),
      );
    case 'changes':
      return { list_changed: changes.take() };
    case 'wait_changed':
      return { list_changed: await changes.wait(Number(cmd.timeout_ms ?? 0)) };
    default:
      throw new Error(`unknown op ${JSON.stringify(cmd.op)}`);
  }
}

async function main() {
  const url = process.env.MCP_URL || process.argv[2];
  const token = process.env.MCP_TOKEN || process.argv[3];
  let conn;
  try {
    if (!url || !token) throw new Error('MCP_URL and MCP_TOKEN are required');
    conn = await connect(url, token);
  } catch (err) {
    const out = { ready: false, error: `${err?.name ?? 'Error'}: ${err?.message ?? String(err)}`, sdk: SDK_NAME };
    if (err instanceof StreamableHTTPError && err.code > 0) out.http_status = err.code;
    emit(out);
    return 1;
  }
  const { client, transport, negotiated } = conn;
  emit({
    ready: true,
    protocol_version: negotiated ?? null,
    server_info: client.getServerVersion() ?? null,
    capabilities: client.getServerCapabilities() ?? null,
    sdk: SDK_NAME,
  });

  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
  for await (const raw of rl) {
    const line = raw.trim();
    if (!line) continue;
    let cmd;
    try {
      cmd = JSON.parse(line);
      if (cmd?.op === 'close') break;
      emit(await answer(client, cmd));
    } catch (err) {
      emit(errorJson(err));
    }
  }
  // close or end of stdin: DELETE the session (the SDK's terminateSession), then close.
  try {
    await transport.terminateSession();
  } catch (err) {
    log('terminateSession failed:', err?.message ?? err);
  }
  try {
    await client.close();
  } catch (err) {
    log('close failed:', err?.message ?? err);
  }
  emit({ closed: true });
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    log('fatal:', err);
    emit({ error: { code: null, message: `fatal: ${err?.message ?? String(err)}` } });
    process.exit(1);
  },
);
