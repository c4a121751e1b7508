"""The trial's sandbox process.

One process per trial phase owns a private mount namespace whose root is a
tmpfs holding bind mounts of the host's top-level directories, except the
ones the trial provides itself: the task's container paths (``/app``,
``/logs/agent``, ``/logs/verifier``, ``/logs/artifacts``, ``/tests``,
``/solution``) are bind mounts of the trial's own directories and ``/tmp``
is private to the trial. It then serves commands on a Unix socket: one JSON
request per connection, one JSON reply.

Started as ``abm run ... -- python -m abm_harbor.sandbox SPEC``, every
command the trial sends is a descendant of this process, so abm's trace of
the run covers all of them. That traced process joins the namespace and
root an untraced sandbox process built (``join_socket``), so the trace starts
with the trial's commands, not with the sandbox's set-up. The module uses the standard library only.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import pwd
import signal
import socket
import subprocess
import sys
import threading

CLONE_NEWNS = 0x00020000
MS_RDONLY = 0x1
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000

_libc = ctypes.CDLL(None, use_errno=True)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    rc = _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))
    _check(rc, f"mount {source} on {target}")


def _bind(source: str, target: str, read_only: bool) -> None:
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    _mount(source, target, None, MS_BIND | MS_REC)
    if read_only:
        _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY)


def _make_private() -> None:
    """Keeps the sandbox's mounts out of the caller's mount namespace."""
    try:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        return
    except OSError as e:
        if e.errno != errno.EINVAL:
            raise
    # In a chroot whose root is not a mount point, "/" cannot be named: make
    # every visible mount private. The mount holding the chroot itself is not
    # visible from here; run the harness in a private mount namespace
    # (`unshare --mount --propagation private`) when chrooted.
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    for point in points:
        try:
            _mount(None, point.encode().decode("unicode_escape"), None, MS_REC | MS_PRIVATE)
        except OSError:
            pass


def enter_root(spec: dict) -> None:
    """Builds the trial's root in a new mount namespace and chroots into it."""
    _check(_libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _make_private()
    root = spec["root"]
    _mount("abm-harbor", root, "tmpfs", 0, "mode=0755")
    binds = spec["binds"]
    own = {b["target"].strip("/").split("/")[0] for b in binds}
    for entry in os.scandir("/"):
        if entry.name in own:
            continue
        dst = os.path.join(root, entry.name)
        if entry.is_symlink():
            os.symlink(os.readlink(entry.path), dst)
        elif entry.is_dir(follow_symlinks=False):
            os.mkdir(dst)
            _mount(entry.path, dst, None, MS_BIND | MS_REC)
    for b in sorted(binds, key=lambda b: b["target"].count("/")):
        _bind(b["source"], root + b["target"], b.get("read_only", False))
    os.chroot(root)
    os.chdir(spec.get("workdir") or "/")


def join_root(spec: dict) -> None:
    """Enters the mount namespace and root another sandbox process built.

    The traced sandbox joins the untraced one's namespace instead of
    building its own, so that its trace starts with the trial's commands,
    not with the sandbox's own mounts and links. The other process hands
    over its namespace and root as descriptors on its socket (no
    /proc/PID access, which a process abm watches does not have).
    """
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
        c.connect(spec["join_socket"])
        c.sendall(b'{"op": "fds"}\n')
        _, fds, _, _ = socket.recv_fds(c, 1024, 2)
    if len(fds) != 2:
        raise RuntimeError(f"{spec['join_socket']} sent {len(fds)} descriptors, not 2")
    ns, root = fds
    _check(_libc.setns(ns, CLONE_NEWNS), "setns(the sandbox's mount namespace)")
    os.fchdir(root)
    os.chroot(".")
    os.close(ns)
    os.close(root)
    os.chdir(spec.get("workdir") or "/")


def _demote(user: str | int | None):
    if user is None or user in ("root", 0, "0"):
        return None
    try:
        pw = pwd.getpwuid(int(user)) if str(user).isdigit() else pwd.getpwnam(str(user))
    except KeyError:
        raise ValueError(f"no user {user!r} in the sandbox's /etc/passwd")

    def demote() -> None:
        os.initgroups(pw.pw_name, pw.pw_gid)
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)

    return demote, pw


def run_command(req: dict, base_env: dict[str, str]) -> dict:
    env = dict(base_env)
    env.update(req.get("env") or {})
    try:
        demoted = _demote(req.get("user"))
    except ValueError as e:
        return {"return_code": 126, "stdout": "", "stderr": f"abm-harbor sandbox: {e}\n"}
    preexec = None
    if demoted is not None:
        preexec, pw = demoted
        env["HOME"] = pw.pw_dir
        env["USER"] = env["LOGNAME"] = pw.pw_name
    shell = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
    try:
        proc = subprocess.Popen(
            [shell, "-c", req["command"]],
            cwd=req.get("cwd") or None,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=preexec,
            start_new_session=True,
        )
    except OSError as e:
        return {"return_code": 126, "stdout": "", "stderr": f"abm-harbor sandbox: {e}\n"}
    timed_out = False
    try:
        out, err = proc.communicate(timeout=req.get("timeout_sec") or None)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
    return {
        "return_code": proc.returncode,
        "stdout": out.decode(errors="replace"),
        "stderr": err.decode(errors="replace"),
        "timed_out": timed_out,
    }


def _read_line(conn: socket.socket) -> bytes:
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        buf += chunk
    return buf


def serve(spec: dict) -> None:
    sock_path = spec["socket"]
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(sock_path):
        os.unlink(sock_path)
    # Bound before the chroot: the path is the trial's, outside the sandbox.
    srv.bind(sock_path)
    if spec.get("join_socket"):
        join_root(spec)
    else:
        enter_root(spec)
    srv.listen(16)
    base_env = spec.get("env") or {}
    stop = threading.Event()

    def handle(conn: socket.socket) -> None:
        with conn:
            try:
                req = json.loads(_read_line(conn) or b"{}")
            except ValueError as e:
                reply = {"error": f"bad request: {e}"}
            else:
                op = req.get("op", "exec")
                if op == "ping":
                    reply = {"pong": os.getpid()}
                elif op == "fds":
                    fds = [os.open("/proc/self/ns/mnt", os.O_RDONLY), os.open("/", os.O_RDONLY)]
                    try:
                        socket.send_fds(conn, [b"{}\n"], fds)
                    finally:
                        for fd in fds:
                            os.close(fd)
                    return
                elif op == "shutdown":
                    stop.set()
                    reply = {"stopping": True}
                elif op == "exec":
                    reply = run_command(req, base_env)
                else:
                    reply = {"error": f"unknown op {op!r}"}
            try:
                conn.sendall(json.dumps(reply).encode() + b"\n")
            except OSError:
                pass
        if stop.is_set():
            # Wakes the accept loop up.
            try:
                srv.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    while not stop.is_set():
        try:
            conn, _ = srv.accept()
        except OSError:
            break
        threading.Thread(target=handle, args=(conn,), daemon=True).start()
    srv.close()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m abm_harbor.sandbox SPEC.json", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        spec = json.load(f)
    serve(spec)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
