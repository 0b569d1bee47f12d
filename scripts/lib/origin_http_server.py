#!/usr/bin/env python3
"""An HTTP origin for cachefs's tests: serves ROOT/files on 127.0.0.1 (port 0, the port
printed on stdout) and logs every request to ROOT/requests.log as "METHOD /path", and
"sent GET /path" once a GET's body has been sent whole.

Names choose how the server behaves (the prefix of the last segment):
  slow*        8 MiB of pattern bytes; stops after the first MiB while ROOT/hold exists
  failN-*      GET answers 500 the first N times (N of 99: always), then the file
  dropN-*      the first N GETs (drop-: the first) send half of the body, then close the
               connection
  dropall-*    every GET closes the connection after half of the body
  wronglen-*   HEAD and the first GET announce and send the file; later GETs announce and
               send half of it (the file changed between lookup and fetch)
  nolength-*   no Content-Length (a GET's body ends when the connection closes)
  moved-NAME   a redirect (302) to NAME in the same directory
A directory of files/ answers a redirect to the same path with "/" added, and with "/" an
empty page; anything else missing is 404. Stops on SIGTERM."""
import os
import signal
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = sys.argv[1]
FILES = os.path.join(ROOT, "files")
SLOW_SIZE = 8 << 20
lock = threading.Lock()
gets_by_path = {}


def log(line):
    with lock:
        with open(os.path.join(ROOT, "requests.log"), "a") as out:
            out.write(line + "\n")


def pattern(size):
    block = bytes(i % 251 for i in range(251 * 256))
    return (block * (size // len(block) + 1))[:size]


def drops(name):
    """How many GETs of NAME are cut: N for dropN-*, 1 for drop-*."""
    prefix = name.split("-")[0]
    if not prefix.startswith("drop") or prefix == "dropall" or "-" not in name:
        return 0
    return int(prefix[4:] or "1")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        log("HEAD " + self.path)
        self.answer(send_body=False)

    def do_GET(self):
        log("GET " + self.path)
        with lock:
            count = gets_by_path.get(self.path, 0) + 1
            gets_by_path[self.path] = count
        self.answer(send_body=True, count=count)

    def answer(self, send_body, count=0):
        relative = urllib.parse.unquote(self.path.lstrip("/"))
        name = os.path.basename(relative.rstrip("/"))
        if name.startswith("slow"):
            return self.send_slow(send_body)
        if name.startswith("moved-"):
            self.send_response(302)
            self.send_header("Location", self.path.replace("moved-", "", 1))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        local = os.path.join(FILES, relative)
        if os.path.isdir(local) and not self.path.endswith("/"):
            self.send_response(301)
            self.send_header("Location", self.path + "/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if os.path.isdir(local):
            return self.send_status(200)
        if not os.path.isfile(local):
            return self.send_status(404)
        if send_body and name.startswith("fail"):
            times = int(name[4:].split("-")[0])
            if times == 99 or count <= times:
                return self.send_status(500)
        info = os.stat(local)
        announced = info.st_size
        if send_body and name.startswith("wronglen-") and count > 1:
            announced = info.st_size // 2
        self.send_response(200)
        if name.startswith("nolength-"):
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(announced))
        self.send_header("ETag", '"%x-%x"' % (info.st_mtime_ns, info.st_size))
        self.send_header("Last-Modified", self.date_time_string(int(info.st_mtime)))
        self.end_headers()
        if not send_body:
            return
        dropped = name.startswith("dropall-") or count <= drops(name)
        remaining = info.st_size // 2 if dropped else announced
        with open(local, "rb") as source:
            while remaining > 0:
                chunk = source.read(min(remaining, 1 << 20))
                self.wfile.write(chunk)
                remaining -= len(chunk)
        if dropped:
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        log("sent GET " + self.path)

    def send_slow(self, send_body):
        self.send_response(200)
        self.send_header("Content-Length", str(SLOW_SIZE))
        self.end_headers()
        if not send_body:
            return
        data = pattern(SLOW_SIZE)
        self.wfile.write(data[: 1 << 20])
        self.wfile.flush()
        while os.path.exists(os.path.join(ROOT, "hold")):
            threading.Event().wait(0.05)
        self.wfile.write(data[1 << 20 :])
        log("sent GET " + self.path)

    def send_status(self, status):
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "--pattern":
        sys.stdout.buffer.write(pattern(SLOW_SIZE))
        sys.exit(0)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print(server.server_address[1], flush=True)
    server.serve_forever()
