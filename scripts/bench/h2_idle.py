#!/usr/bin/env python3
"""How long an idle HTTP/2 connection stays open: starts `toolgate serve` (default connection
settings unless TOOLGATE_IDLE_TIMEOUT_SECS / TOOLGATE_HEADER_TIMEOUT_SECS are set), opens two
HTTP/2 prior-knowledge connections that send only the preface and an empty SETTINGS frame,
and prints when the server closed each. `polite` answers the server's PINGs as a live client
does; `silent` never writes again, as an attacker holding file descriptors need not.

Usage: scripts/bench/h2_idle.py [binary=target/release/toolgate]
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
EMPTY_SETTINGS = bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
PING, GOAWAY = 6, 7


def measure(host, port, mode, results):
    sock = socket.create_connection((host, port))
    start = time.monotonic()
    sock.sendall(PREFACE + EMPTY_SETTINGS)
    frames, buffer = [], b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        buffer += chunk
        while len(buffer) >= 9:
            length = int.from_bytes(buffer[0:3], "big")
            if len(buffer) < 9 + length:
                break
            kind, flags, payload = buffer[3], buffer[4], buffer[9:9 + length]
            frames.append(kind)
            if mode == "polite" and kind == PING and not flags & 1:
                sock.sendall(bytes([0, 0, 8, PING, 1, 0, 0, 0, 0]) + payload)
            buffer = buffer[9 + length:]
    results[mode] = (time.monotonic() - start, frames)


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/toolgate"
    data = tempfile.mkdtemp()
    env = {key: value for key, value in os.environ.items() if key.startswith("TOOLGATE_")}
    env.update({"PATH": os.environ.get("PATH", ""), "TOOLGATE_LOG_LEVEL": "warn",
                "TOOLGATE_JWT_SECRET": "h2-idle-measurement-secret-of-32-bytes"})
    server = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", data],
                              stdout=subprocess.PIPE, env=env, text=True)
    try:
        line = server.stdout.readline().strip()
        host, port = line.rsplit("http://", 1)[1].rsplit(":", 1)
        results = {}
        threads = [threading.Thread(target=measure, args=(host, int(port), mode, results))
                   for mode in ("polite", "silent")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(data, ignore_errors=True)
    for mode, (after, frames) in sorted(results.items()):
        goaway = "with GOAWAY" if GOAWAY in frames else "without GOAWAY"
        print(f"{mode}: closed after {after:.2f} s, {goaway} (frame types {frames})")


if __name__ == "__main__":
    main()
