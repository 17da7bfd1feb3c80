"""A hostile MCP upstream for scripts/bench/hostile_sse.sh: a Streamable HTTP server on a free
loopback port whose `tools/call` answer is one server-sent event that never ends, written 256
bytes at a time (5 MiB in all, then the connection closes). `initialize` and notifications are
answered as the protocol says. Prints `listening on <url>` once it accepts connections."""

import http.server
import json
import socketserver

CHUNK = b"x" * 256
CHUNKS = 5 * 1024 * 1024 // len(CHUNK)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        request = json.loads(self.rfile.read(length) or b"null")
        method = request.get("method") if isinstance(request, dict) else None
        if method == "initialize":
            body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {
                "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"}}}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif method == "tools/call":
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            try:
                self.wfile.write(b"data: ")
                for _ in range(CHUNKS):
                    self.wfile.write(CHUNK)
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True
        else:
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()

    def do_DELETE(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


server = Server(("127.0.0.1", 0), Handler)
print(f"listening on http://127.0.0.1:{server.server_address[1]}/mcp", flush=True)
server.serve_forever()
