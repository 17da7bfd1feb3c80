#!/usr/bin/env node
// Helpers of scripts/mcp_conformance.sh (the MCP conformance suite against toolgate's /mcp).
// Two roles, no dependencies beyond Node's standard library:
//
//   node mcp_conformance_proxy.mjs proxy TARGET_BASE TOKEN_FILE LOG_FILE PORT_FILE
//     A reverse proxy for the suite, which cannot send an Authorization header: it adds
//     `Authorization: Bearer <token>` (read from TOKEN_FILE) to every request that has none,
//     forwards it to TARGET_BASE with the client's own Host and Origin (so that toolgate's
//     DNS-rebinding check sees what the suite sent), and streams the answer back unbuffered
//     (SSE passes through event by event). Each exchange is appended to LOG_FILE as one JSON
//     line: request method, path, headers and body; response status, headers and body (the
//     first 64 KiB, decoded; the token is masked). Writes the port it listens on to PORT_FILE.
//     With the environment variable ALIAS_PREFIX set, it also renames tools/call targets (see
//     alias below).
//
//   node mcp_conformance_proxy.mjs upstream PORT_FILE
//     The HTTP service behind the catalog's `openapi` source, so that tools/call forwards
//     somewhere real: GET /text answers JSON {"text": ...}, GET /error answers 500, POST /echo
//     answers its JSON body back. Writes the port it listens on to PORT_FILE.
import http from 'node:http';
import fs from 'node:fs';
import zlib from 'node:zlib';

const [role, ...args] = process.argv.slice(2);
const LOG_LIMIT = 64 * 1024;

function listen(server, portFile) {
  server.listen(0, '127.0.0.1', () => {
    fs.writeFileSync(portFile, String(server.address().port));
  });
}

function capture(limit) {
  const parts = [];
  let size = 0;
  return {
    add(chunk) {
      if (size < limit) parts.push(chunk.subarray(0, limit - size));
      size += chunk.length;
    },
    text(encoding) {
      let buf = Buffer.concat(parts);
      if (size <= limit && encoding) {
        // Log what the client reads: the body decoded (it is forwarded as it came).
        try {
          if (encoding === 'gzip') buf = zlib.gunzipSync(buf);
          else if (encoding === 'deflate') buf = zlib.inflateSync(buf);
          else if (encoding === 'br') buf = zlib.brotliDecompressSync(buf);
        } catch {
          // a stream cut short: keep the raw bytes
        }
      }
      const s = buf.toString('utf8');
      return size > limit ? `${s}…[${size} bytes]` : s;
    },
  };
}

// With ALIAS_PREFIX (e.g. `conf.`): a tools/call of a bare name (`test_simple_text`) calls
// ALIAS_PREFIX + name instead, so that the suite's tools/call scenarios reach toolgate's tools,
// which are always named `<source>.<operation>`.
const aliasPrefix = process.env.ALIAS_PREFIX || '';
function alias(body) {
  try {
    const message = JSON.parse(body.toString('utf8'));
    const name = message?.params?.name;
    if (message?.method === 'tools/call' && typeof name === 'string' && !name.includes('.')) {
      message.params.name = aliasPrefix + name;
      return Buffer.from(JSON.stringify(message));
    }
  } catch {
    // not JSON: forward as it is
  }
  return body;
}

function proxy([targetBase, tokenFile, logFile, portFile]) {
  const target = new URL(targetBase);
  const token = fs.readFileSync(tokenFile, 'utf8').trim();
  const log = fs.createWriteStream(logFile, { flags: 'a' });
  const mask = (headers) => {
    const h = { ...headers };
    if (h.authorization) h.authorization = h.authorization.replace(token, '<token>');
    return h;
  };
  const agent = new http.Agent({ keepAlive: true });
  const server = http.createServer((req, res) => {
    const headers = { ...req.headers };
    delete headers['content-length']; // set again once the body is read
    delete headers['transfer-encoding'];
    if (!headers.authorization) headers.authorization = `Bearer ${token}`;
    const reqBody = capture(LOG_LIMIT);
    const resBody = capture(LOG_LIMIT);
    const entry = {
      time: new Date().toISOString(),
      request: { method: req.method, path: req.url, headers: mask(headers) },
    };
    let logged = false;
    const done = (extra) => {
      if (logged) return;
      logged = true;
      entry.request.body = reqBody.text();
      if (entry.response) {
        entry.response.body = resBody.text(entry.response.headers['content-encoding']);
      }
      Object.assign(entry, extra);
      log.write(JSON.stringify(entry) + '\n');
    };
    const up = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers, // Host and Origin exactly as the client sent them
        agent,
      },
      (upRes) => {
        entry.response = { status: upRes.statusCode, headers: upRes.headers };
        res.writeHead(upRes.statusCode, upRes.rawHeaders);
        res.flushHeaders();
        upRes.on('data', (chunk) => {
          resBody.add(chunk);
          res.write(chunk); // no buffering: each SSE event goes out as it comes
        });
        upRes.on('end', () => {
          res.end();
          done({});
        });
        upRes.on('error', (e) => {
          res.destroy();
          done({ error: `upstream: ${e.message}` });
        });
      },
    );
    up.on('error', (e) => {
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`proxy: ${e.message}`);
      } else {
        res.destroy();
      }
      done({ error: `proxy: ${e.message}` });
    });
    // The client went away (e.g. it cancelled an SSE stream): end the upstream request too.
    res.on('close', () => {
      if (!res.writableFinished) {
        up.destroy();
        done({ note: 'client closed the response early' });
      }
    });
    // Requests are small JSON-RPC messages: read each whole, so that it can be rewritten.
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      let body = Buffer.concat(chunks);
      if (aliasPrefix && body.length) body = alias(body);
      reqBody.add(body);
      up.setHeader('content-length', body.length);
      up.end(body);
    });
  });
  listen(server, portFile);
}

function upstream([portFile]) {
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const json = (status, body) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      const path = new URL(req.url, 'http://x').pathname;
      if (req.method === 'GET' && path === '/text') {
        json(200, { text: 'This is a simple text response for testing.' });
      } else if (req.method === 'GET' && path === '/error') {
        json(500, { error: 'This tool intentionally returns an error for testing' });
      } else if (req.method === 'POST' && path === '/echo') {
        let body = {};
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
        } catch {
          body = { unparsable: true };
        }
        json(200, { echo: body });
      } else {
        json(404, { error: 'not found' });
      }
    });
  });
  listen(server, portFile);
}

if (role === 'proxy' && args.length === 4) proxy(args);
else if (role === 'upstream' && args.length === 1) upstream(args);
else {
  console.error('usage: mcp_conformance_proxy.mjs proxy TARGET_BASE TOKEN_FILE LOG_FILE PORT_FILE\n' +
    '       mcp_conformance_proxy.mjs upstream PORT_FILE');
  process.exit(2);
}
