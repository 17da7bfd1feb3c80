// Drives the official MCP TypeScript SDK v2 client (@modelcontextprotocol/client, pinned in
// package.json / package-lock.json) against an MCP server over Streamable HTTP.
//
// Speaks the line protocol of tests/mcp_clients/README.md on stdin/stdout; stderr carries logs.
// Configuration (environment; the first two may also be given as argv[2] and argv[3]):
//   MCP_URL               the endpoint, e.g. http://127.0.0.1:8080/mcp
//   MCP_TOKEN             sent as `Authorization: Bearer <token>` on every HTTP request, through the
//                         SDK's documented way: StreamableHTTPClientTransport's requestInit.headers
//   MCP_PROTOCOL_VERSION  optional: connect at exactly this revision or answer ready:false.
//                         2026-07-28 (and later): versionNegotiation { mode: { pin } }, a
//                         server/discover probe with no fallback; an earlier revision:
//                         supportedProtocolVersions [it], so initialize offers and accepts only it
//   MCP_NEGOTIATION       optional: "legacy" (the SDK's default: initialize only) or "auto"
//                         (server/discover probe, falling back to initialize)
import { createInterface } from 'node:readline';
import { readFileSync } from 'node:fs';
import {
  Client,
  ProtocolError,
  SdkError,
  SdkHttpError,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';

const SDK_VERSION = JSON.parse(
  readFileSync(new URL('./node_modules/@modelcontextprotocol/client/package.json', import.meta.url), 'utf8'),
).version;
const SDK_NAME = `@modelcontextprotocol/client ${SDK_VERSION}`;
const FIRST_MODERN = '2026-07-28';
const REQUEST_TIMEOUT_MS = 60_000;
const TOOL_KEYS = ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations', '_meta'];

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const log = (...args) => console.error('driver.mjs (ts v2):', ...args);
// Anything the SDK would print goes to stderr, never into the line protocol.
console.log = console.info = console.debug = console.warn = (...args) => console.error(...args);

const toolJson = (tool) => Object.fromEntries(TOOL_KEYS.map((k) => [k, tool[k] ?? null]));
const resultJson = (r) => ({
  result: { content: r.content ?? [], structuredContent: r.structuredContent ?? null, isError: r.isError === true },
});
const describe = (err) => `${err?.name ?? 'Error'}: ${err?.message ?? String(err)}`;
function errorJson(err) {
  if (ProtocolError.isInstance(err)) {
    // A JSON-RPC error the server answered.
    const out = { code: err.code, message: err.message };
    if (err.data !== undefined) out.data = err.data;
    return { error: out };
  }
  const out = { code: null, message: describe(err) };
  if (SdkError.isInstance(err)) out.sdk_code = err.code;
  if (SdkHttpError.isInstance(err)) out.http_status = err.status;
  return { error: out };
}

// notifications/tools/list_changed, counted through the SDK's notification handler (on a
// 2026-07-28 connection they arrive on the subscriptions/listen stream opened in connect()).
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
  if (negotiation !== undefined && negotiation !== 'legacy' && negotiation !== 'auto') {
    throw new Error(`MCP_NEGOTIATION must be legacy or auto, not ${JSON.stringify(negotiation)}`);
  }
  const options = {};
  if (pinned !== undefined && pinned >= FIRST_MODERN) {
    options.versionNegotiation = { mode: { pin: pinned } };
  } else {
    if (pinned !== undefined) options.supportedProtocolVersions = [pinned];
    if (negotiation !== undefined) options.versionNegotiation = { mode: negotiation };
  }
  const client = new Client({ name: 'toolgate-test-driver-ts2', version: SDK_VERSION }, options);
  client.setNotificationHandler('notifications/tools/list_changed', () => changes.bump());
  client.onerror = (err) => log('client error:', err?.message ?? err);
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
  const negotiated = client.getNegotiatedProtocolVersion();
  if (pinned !== undefined && negotiated !== pinned) {
    await client.close().catch(() => {});
    throw new Error(`negotiated ${negotiated}, not the pinned ${pinned}`);
  }
  if (client.getProtocolEra() === 'modern' && client.getServerCapabilities()?.tools?.listChanged) {
    // 2026-07-28 has no standing GET stream: change notifications come only on a
    // subscriptions/listen stream, and the SDK dispatches them to setNotificationHandler.
    const sub = await client.listen({ toolsListChanged: true }, { timeout: REQUEST_TIMEOUT_MS });
    log('subscriptions/listen acknowledged:', JSON.stringify(sub.honoredFilter));
    sub.closed.then((how) => log('subscriptions/listen ended:', how));
  }
  return { client, transport, negotiated };
}

async function listPage(client, cursor) {
  // An explicit cursor fetches one page; without one the SDK walks every page itself and
  // aggregates (cacheMode 'refresh': always from the wire, never from its response cache).
  const page =
    cursor == null
      ? await client.listTools(undefined, { timeout: REQUEST_TIMEOUT_MS, cacheMode: 'refresh' })
      : await client.listTools({ cursor }, { timeout: REQUEST_TIMEOUT_MS });
  return [page.tools ?? [], page.nextCursor ?? null];
}

async function firstPage(client) {
  // list_page with cursor null wants the server's first page as sent (with its nextCursor), but
  // the SDK's listTools() without a cursor aggregates every page, and { cursor: null } would put
  // a null cursor on the wire; so the first page goes through the SDK's generic request().
  const page = await client.request(
    { method: 'tools/list', params: {} },
    { timeout: REQUEST_TIMEOUT_MS },
  );
  return [page.tools ?? [], page.nextCursor ?? null];
}

async function answer(client, cmd) {
  switch (cmd.op) {
    case 'list': {
      const [tools] = await listPage(client, null);
      return { tools: tools.map(toolJson) };
    }
    case 'list_page': {
      const [page, next] = cmd.cursor == null ? await firstPage(client) : await listPage(client, cmd.cursor);
      return { tools: page.map(toolJson), next_cursor: next };
    }
    case 'call':
      return resultJson(
        await client.callTool({ name: cmd.name, arguments: cmd.arguments ?? {} }, { timeout: REQUEST_TIMEOUT_MS }),
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
    const out = { ready: false, error: describe(err), sdk: SDK_NAME };
    if (SdkHttpError.isInstance(err)) out.http_status = err.status;
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
    try {
      const cmd = JSON.parse(line);
      if (cmd?.op === 'close') break;
      emit(await answer(client, cmd));
    } catch (err) {
      emit(errorJson(err));
    }
  }
  // close or end of stdin: DELETE the session when there is one (the SDK's terminateSession;
  // a 2026-07-28 connection has none), then close.
  if (transport.sessionId !== undefined) {
    try {
      await transport.terminateSession();
    } catch (err) {
      log('terminateSession failed:', err?.message ?? err);
    }
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
    emit({ error: { code: null, message: `fatal: ${describe(err)}` } });
    process.exit(1);
  },
);
