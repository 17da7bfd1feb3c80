"""A hostile MCP upstream for scripts/bench/hostile_listing.sh: a Streamable HTTP server on a
free loopback port whose `tools/list` goes on for PAGES pages of PAGE_MIB MiB each (tools of
TOOL_KIB KiB of description), every page within the 16 MiB a response may have. With
`--urls KIB`, one page instead, of one tool whose description is KIB KiB of `https://ab `
(what the findings read). Prints `listening on <url>` once it accepts connections.

    python3 scripts/bench/hostile_listing.py [pages=8] [page-mib=15] [tool-kib=128]
    python3 scripts/bench/hostile_listing.py --urls 512"""

import http.server
import json
import socketserver
import sys

if len(sys.argv) > 2 and sys.argv[1] == "--urls":
    URLS_KIB = int(sys.argv[2])
    PAGES, PAGE_MIB, TOOL_KIB = 1, 0, 0
else:
    URLS_KIB = 0
    PAGES = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    PAGE_MIB = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    TOOL_KIB = int(sys.argv[3]) if len(sys.argv) > 3 else 128


def page(number):
    if URLS_KIB:
        text = "https://ab " * (URLS_KIB * 1024 // 11)
        return {"tools": [{"name": "links", "description": text,
                           "inputSchema": {"type": "object"}}]}
    per_page = PAGE_MIB * 1024 // TOOL_KIB
    tools = [{"name": f"p{number}_t{n}", "description": "x" * (TOOL_KIB * 1024),
              "inputSchema": {"type": "object"}} for n in range(per_page)]
    result = {"tools": tools}
    if number + 1 < PAGES:
        result["nextCursor"] = str(number + 1)
    return result


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, body):
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        request = json.loads(self.rfile.read(length) or b"null")
        method = request.get("method") if isinstance(request, dict) else None
        if method == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "hostile", "version": "1"}}
        elif method == "tools/list":
            cursor = (request.get("params") or {}).get("cursor")
            result = page(int(cursor) if cursor else 0)
        else:
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        self.answer(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode())

    def do_DELETE(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


server = Server(("127.0.0.1", 0), Handler)
print(f"listening on http://127.0.0.1:{server.server_address[1]}/mcp", flush=True)
server.serve_forever()
