"""The command server of one sample: it runs under `abm run`, so every
command it starts is in the run's process tree and in its trace.

Standard library only, started as a script (`python -I -B -S`), so that
its own start reads as little as possible and writes nothing.

Protocol, one request per connection on a Unix socket: the client sends
one JSON object and shuts its side down; the server answers with one JSON
object and closes.

- `{"op": "exec", "cmd": [...], "cwd": DIR, "env": {...}, "input": B64|null,
  "timeout": SECS|null, "limit": BYTES}` runs the command and answers
  `{"returncode": N, "stdout": B64, "stderr": B64, "truncated": BOOL}` or
  `{"timeout": true}` (its process group was killed), or
  `{"error": TEXT, "errno": N}` when it could not start.
- `{"op": "ping"}` answers `{"ok": true}`.
- `{"op": "quit"}` answers `{"ok": true}` and exits; `abm run` then seals
  the trace.
"""

import base64
import json
import os
import signal
import socket
import socketserver
import subprocess
import sys
import threading


def _b64(data):
    return base64.b64encode(data).decode("ascii")


def _tail(data, limit):
    if limit is not None and len(data) > limit:
        return data[len(data) - limit :], True
    return data, False


def _run(req):
    env = dict(os.environ)
    env.update(req.get("env") or {})
    stdin = req.get("input")
    data = base64.b64decode(stdin) if stdin is not None else None
    try:
        proc = subprocess.Popen(
            req["cmd"],
            cwd=req.get("cwd"),
            env=env,
            stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as e:
        return {"error": str(e), "errno": e.errno or 0}
    try:
        out, err = proc.communicate(data, timeout=req.get("timeout"))
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        return {"timeout": True}
    limit = req.get("limit")
    out, t1 = _tail(out, limit)
    err, t2 = _tail(err, limit)
    return {
        "returncode": proc.returncode,
        "stdout": _b64(out),
        "stderr": _b64(err),
        "truncated": t1 or t2,
    }


class _Handler(socketserver.StreamRequestHandler):
    def handle(self):
        try:
            req = json.loads(self.rfile.read() or b"{}")
        except ValueError as e:
            reply = {"error": "bad request: %s" % e, "errno": 0}
            self.wfile.write(json.dumps(reply).encode())
            return
        op = req.get("op")
        if op == "exec":
            reply = _run(req)
        elif op in ("ping", "quit"):
            reply = {"ok": True}
        else:
            reply = {"error": "unknown op %r" % op, "errno": 0}
        self.wfile.write(json.dumps(reply).encode())
        if op == "quit":
            threading.Thread(target=self.server.shutdown, daemon=True).start()


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: _server.py SOCKET\n")
        return 2
    path = sys.argv[1]
    old = os.umask(0o077)
    try:
        server = _Server(path, _Handler)
    finally:
        os.umask(old)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        # The socket file is left for the client to remove: an unlink here
        # would be an action of the watched tree.
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
