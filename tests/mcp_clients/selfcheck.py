"""Runs the MCP client drivers against selfcheck_server.py and checks their answers (no toolgate).

Started by selfcheck.sh, from the repository root, after the client and server environments are
installed. Standard library only. Arguments: optional substrings; only the cases whose names
contain one of them run. Prints one line per case and closes with "N passed, N failed".
"""

import json
import os
import queue
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.getcwd()
HERE = os.path.join(ROOT, "tests", "mcp_clients")
TOKEN = "selfcheck-token"
SERVER_PYTHON = {  # which SDK line the server runs on
    "v1": os.path.join(ROOT, ".venv-mcp", "bin", "python"),  # FastMCP, 2025 revisions only
    "v2": os.path.join(ROOT, ".venv-mcp-client", "bin", "python"),  # MCPServer, 2025 and 2026-07-28
}
DRIVERS = {
    "py2": [os.path.join(ROOT, ".venv-mcp-client", "bin", "python"), os.path.join(HERE, "python", "driver.py")],
    "py1": [os.path.join(ROOT, ".venv-mcp", "bin", "python"), os.path.join(HERE, "python", "driver.py")],
    "ts": ["node", os.path.join(HERE, "ts", "driver.mjs")],
    "ts2": ["node", os.path.join(HERE, "ts2", "driver.mjs")],
}
TOOL_KEYS = ["name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta"]
LINE_TIMEOUT_S = 30
MODERN = "2026-07-28"


class Failed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failed(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, line):
        self.port = free_port()
        fd, self.log_path = tempfile.mkstemp(prefix=f"mcp-selfcheck-{line}-", suffix=".log")
        os.close(fd)
        self.errors = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [SERVER_PYTHON[line], os.path.join(HERE, "selfcheck_server.py"), str(self.port), self.log_path],
            env={**os.environ, "MCP_TOKEN": TOKEN},
            stdout=self.errors,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                self.errors.seek(0)
                raise RuntimeError(f"the {line} server exited: {self.errors.read().decode(errors='replace')}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the {line} server did not listen on {self.port}")
                time.sleep(0.1)
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def requests(self):
        with open(self.log_path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.unlink(self.log_path)


class Driver:
    def __init__(self, name, url, token, env):
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            DRIVERS[name],
            env={**os.environ, **env, "MCP_URL": url, "MCP_TOKEN": token},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            bufsize=1,
        )
        self.lines = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def read(self):
        try:
            line = self.lines.get(timeout=LINE_TIMEOUT_S)
        except queue.Empty:
            raise Failed(f"no answer within {LINE_TIMEOUT_S}s")
        check(line is not None, "the driver closed stdout without answering")
        try:
            return json.loads(line)
        except ValueError:
            raise Failed(f"not a JSON line: {line!r}")

    def ask(self, cmd):
        self.proc.stdin.write((cmd if isinstance(cmd, str) else json.dumps(cmd)) + "\n")
        self.proc.stdin.flush()
        return self.read()

    def finish(self):
        """Waits for the exit after close; stdout must hold nothing more."""
        try:
            code = self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise Failed("the driver did not exit within 15s")
        rest = []
        while (line := self.lines.get(timeout=5)) is not None:
            rest.append(line)
        check(not rest, f"more on stdout after the last answer: {rest!r}")
        return code

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stderr_tail(self, n=15):
        self.stderr.seek(0)
        return "\n".join(self.stderr.read().decode(errors="replace").splitlines()[-n:])


def names(answer):
    check("tools" in answer, f"expected tools, got {answer}")
    return [t["name"] for t in answer["tools"]]


def text_of(answer):
    check("result" in answer, f"expected a result, got {answer}")
    result = answer["result"]
    check(result["isError"] is False, f"isError in {result}")
    content = result["content"]
    check(content and content[0].get("type") == "text", f"expected text content, got {content}")
    return content[0]["text"]


def full_scenario(d, version):
    ready = d.read()
    check(ready.get("ready") is True, f"not ready: {ready}")
    check(ready["protocol_version"] == version, f"negotiated {ready['protocol_version']}, expected {version}")
    check((ready.get("server_info") or {}).get("name") == "selfcheck", f"server_info {ready.get('server_info')}")
    check(isinstance((ready.get("capabilities") or {}).get("tools"), dict), f"capabilities {ready.get('capabilities')}")

    listed = d.ask({"op": "list"})
    check(names(listed) == ["add_tool", "echo"], f"list: {names(listed)}")
    check(all(list(t) == TOOL_KEYS for t in listed["tools"]), f"tool keys: {[list(t) for t in listed['tools']]}")
    echo = listed["tools"][1]
    check(echo["description"] == "Echo the text back.", f"echo description {echo['description']!r}")
    check("text" in echo["inputSchema"].get("properties", {}), f"echo inputSchema {echo['inputSchema']}")
    check((echo["annotations"] or {}).get("readOnlyHint") is True, f"echo annotations {echo['annotations']}")

    first = d.ask({"op": "list_page", "cursor": None})
    check(names(first) == ["add_tool"] and first.get("next_cursor") == "1", f"first page {first}")
    second = d.ask({"op": "list_page", "cursor": "1"})
    check(names(second) == ["echo"] and second.get("next_cursor") is None, f"second page {second}")

    check(text_of(d.ask({"op": "call", "name": "echo", "arguments": {"text": "hi"}})) == "hi", "echo")
    unknown = d.ask({"op": "call", "name": "nope", "arguments": {}})
    check((unknown.get("error") or {}).get("code") == -32602, f"unknown tool: {unknown}")
    check("nope" in unknown["error"]["message"], f"unknown tool message: {unknown}")

    check(d.ask({"op": "changes"}) == {"list_changed": 0}, "changes before add_tool")
    check(text_of(d.ask({"op": "call", "name": "add_tool", "arguments": {"name": "third"}})) == "added third", "add")
    changed = d.ask({"op": "wait_changed", "timeout_ms": 10000})
    check(changed.get("list_changed", 0) >= 1, f"wait_changed after add_tool: {changed}")
    check(d.ask({"op": "changes"}) == {"list_changed": 0}, "changes after wait_changed")
    check(names(d.ask({"op": "list"})) == ["add_tool", "echo", "third"], "list after add_tool")
    check(text_of(d.ask({"op": "call", "name": "third", "arguments": {"text": "x"}})) == "third:x", "call third")
    quiet = d.ask({"op": "wait_changed", "timeout_ms": 300})
    check(quiet == {"list_changed": 0}, f"wait_changed with nothing pending: {quiet}")

    bogus = d.ask({"op": "bogus"})
    check((bogus.get("error") or {}).get("code", "missing") is None, f"unknown op: {bogus}")
    garbage = d.ask("this is not json")
    check((garbage.get("error") or {}).get("code", "missing") is None, f"not JSON: {garbage}")

    check(d.ask({"op": "close"}) == {"closed": True}, "close")
    check(d.finish() == 0, "exit code after close")
    return ready


def connect_only(d, version):
    ready = d.read()
    if version is None:
        check(ready.get("ready") is False and ready.get("error"), f"expected ready:false, got {ready}")
        d.proc.stdin.close()
        check(d.finish() == 1, "exit code after ready:false")
        return ready
    check(ready.get("ready") is True, f"not ready: {ready}")
    check(ready["protocol_version"] == version, f"negotiated {ready['protocol_version']}, expected {version}")
    check(names(d.ask({"op": "list"})) == ["add_tool", "echo"], "list")
    check(d.ask({"op": "close"}) == {"closed": True}, "close")
    check(d.finish() == 0, "exit code after close")
    return ready


def wire_notes(requests, version, full):
    """What the server saw; for a full run, also what must have happened on the wire."""
    rpc = [m for r in requests for m in r.get("rpc", [])]
    notes = []
    if "server/discover" in rpc:
        notes.append("probed server/discover")
    if any(r["method"] == "GET" and r.get("status") == 200 for r in requests):
        notes.append("GET stream")
    if "subscriptions/listen" in rpc:
        notes.append("subscriptions/listen")
    if any(r["method"] == "DELETE" for r in requests):
        notes.append("DELETE")
    if full:
        check(all(r["auth"] for r in requests), f"a request without the bearer token: {requests}")
        if version == MODERN:
            check("subscriptions/listen" in rpc, "no subscriptions/listen on a 2026-07-28 connection")
            check(all(r["session"] is None for r in requests), "a session id on a 2026-07-28 connection")
        else:
            check("GET stream" in notes, "no GET stream on a session")
            check("DELETE" in notes, "no DELETE at close")
    return ", ".join(notes) or "-"


# name, server line, driver, extra environment, scenario, expected version (None: ready:false)
CASES = [
    ("v1-server/py2", "v1", "py2", {}, full_scenario, "2025-11-25"),
    ("v1-server/py1", "v1", "py1", {}, full_scenario, "2025-11-25"),
    ("v1-server/ts", "v1", "ts", {}, full_scenario, "2025-11-25"),
    ("v1-server/ts2", "v1", "ts2", {}, full_scenario, "2025-11-25"),
    ("v1-server/ts2-auto", "v1", "ts2", {"MCP_NEGOTIATION": "auto"}, full_scenario, "2025-11-25"),
    ("v2-server/py2", "v2", "py2", {}, full_scenario, MODERN),
    ("v2-server/py2-legacy", "v2", "py2", {"MCP_NEGOTIATION": "legacy"}, full_scenario, "2025-11-25"),
    ("v2-server/py2-pin-2026", "v2", "py2", {"MCP_PROTOCOL_VERSION": MODERN}, full_scenario, MODERN),
    ("v2-server/py1", "v2", "py1", {}, full_scenario, "2025-11-25"),
    ("v2-server/ts", "v2", "ts", {}, full_scenario, "2025-11-25"),
    ("v2-server/ts2", "v2", "ts2", {}, full_scenario, "2025-11-25"),
    ("v2-server/ts2-auto", "v2", "ts2", {"MCP_NEGOTIATION": "auto"}, full_scenario, MODERN),
    ("v2-server/ts2-pin-2026", "v2", "ts2", {"MCP_PROTOCOL_VERSION": MODERN}, full_scenario, MODERN),
    ("v1-server/ts2-pin-2025-06-18", "v1", "ts2", {"MCP_PROTOCOL_VERSION": "2025-06-18"}, connect_only, "2025-06-18"),
    ("v1-server/ts-pin-2025-06-18", "v1", "ts", {"MCP_PROTOCOL_VERSION": "2025-06-18"}, connect_only, None),
    ("v1-server/py2-pin-2025-06-18", "v1", "py2", {"MCP_PROTOCOL_VERSION": "2025-06-18"}, connect_only, None),
    ("v1-server/ts2-pin-2026", "v1", "ts2", {"MCP_PROTOCOL_VERSION": MODERN}, connect_only, None),
    ("v1-server/py2-pin-2026", "v1", "py2", {"MCP_PROTOCOL_VERSION": MODERN}, connect_only, None),
    *[(f"v1-server/{d}-wrong-token", "v1", d, {"TOKEN": "wrong"}, connect_only, None) for d in DRIVERS],
    *[(f"v2-server/{d}-wrong-token", "v2", d, {"TOKEN": "wrong"}, connect_only, None) for d in ("py2", "ts2")],
]


def run(case, shared):
    name, line, driver, env, scenario, version = case
    env = dict(env)
    token = env.pop("TOKEN", TOKEN)
    # A full run changes the server (add_tool), so it gets one of its own.
    if scenario is full_scenario:
        server = Server(line)
    else:
        if line not in shared:
            shared[line] = Server(line)
        server = shared[line]
    seen_before = len(server.requests())
    d = Driver(driver, server.url, token, env)
    try:
        ready = scenario(d, version)
        notes = wire_notes(server.requests()[seen_before:], version, scenario is full_scenario)
        if ready.get("ready"):
            return f"PASS {name}: {ready.get('sdk')} negotiated {ready['protocol_version']}; wire: {notes}"
        extra = f" (http_status {ready['http_status']})" if "http_status" in ready else ""
        return f"PASS {name}: {ready.get('sdk')} ready:false{extra}: {ready['error'][:160]!r}"
    except Failed as failure:
        d.kill()
        raise Failed(f"{name}: {failure}\n--- driver stderr (tail) ---\n{d.stderr_tail()}") from None
    finally:
        d.kill()
        if scenario is full_scenario:
            server.stop()


def main():
    wanted = sys.argv[1:]
    cases = [c for c in CASES if not wanted or any(w in c[0] for w in wanted)]
    shared = {}
    passed = failed = 0
    try:
        for case in cases:
            try:
                print(run(case, shared), flush=True)
                passed += 1
            except Failed as failure:
                print(f"FAIL {failure}", flush=True)
                failed += 1
            except Exception as error:  # a server that did not start, say
                print(f"FAIL {case[0]}: {type(error).__name__}: {error}", flush=True)
                failed += 1
    finally:
        for server in shared.values():
            server.stop()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
