"""``AbmEnvironment``: a Harbor environment whose agent phase runs under abm.

Each trial gets a sandbox: a private mount namespace on this machine in
which the task's container paths (the workdir, ``/logs/*``, ``/tests``,
``/solution``) are the trial's own directories and ``/tmp`` is private (see
``sandbox.py``). Two sandbox processes serve the trial's commands:

- the **traced** one, started as ``abm run --trace TRACE -- python -m
  abm_harbor.sandbox``: from the agent's setup to the end of its run every
  command harbor sends is its descendant, so the trace covers everything
  the agent ran;
- the **untraced** one, for the task's own setup before the agent and the
  verifier's tests after the trace is sealed.

``seal_trace()`` ends the traced sandbox: abm then seals the trace. The
verifier (``AbmVerifier``) calls it before it runs the tests, so the
tests' commands are not the agent's. The trial's abm files are in
``TRIAL_DIR/abm/``: ``trace.abmt``, ``run.json`` (what the verifier needs:
the trace, the workspace, the abm binary) and ``abm-run.log`` (abm's
summary).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path, PurePosixPath

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities

from abm_harbor.abm import find_abm

# Files of a task's environment/ directory that describe an image, not the
# workspace: never copied into the workdir.
IMAGE_FILES = {"Dockerfile", "docker-compose.yaml", "docker-compose.yml", "setup.sh"}

BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
}


def _truthy(value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected true or false, got {value!r}")


def abm_dir(trial_dir: Path) -> Path:
    """Where a trial's trace and run description live."""
    return trial_dir / "abm"


class _Sandbox:
    """One sandbox process and its socket."""

    def __init__(self, sock: Path, process: asyncio.subprocess.Process, log: Path):
        self.sock = sock
        self.process = process
        self.log = log

    async def request(self, req: dict, timeout: float | None = None) -> dict:
        reader, writer = await asyncio.open_unix_connection(str(self.sock), limit=1 << 30)
        try:
            writer.write(json.dumps(req).encode() + b"\n")
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), timeout=timeout)
        finally:
            writer.close()
        if not line:
            raise RuntimeError(f"the sandbox closed the connection (log: {self.log})")
        return json.loads(line)

    async def wait_ready(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        while True:
            if self.process.returncode is not None:
                raise RuntimeError(
                    f"the sandbox exited with status {self.process.returncode} before it "
                    f"was ready:\n{self.log.read_text(errors='replace')[-4000:]}"
                )
            try:
                await self.request({"op": "ping"}, timeout=5)
                return
            except (OSError, asyncio.TimeoutError):
                if time.monotonic() > end:
                    raise RuntimeError(
                        f"the sandbox did not answer within {timeout:.0f}s (log: {self.log})"
                    )
                await asyncio.sleep(0.05)

    async def shutdown(self, timeout: float) -> int:
        if self.process.returncode is None:
            try:
                await self.request({"op": "shutdown"}, timeout=10)
            except (OSError, asyncio.TimeoutError, RuntimeError):
                pass
            try:
                await asyncio.wait_for(self.process.wait(), timeout=timeout)
            except asyncio.TimeoutError:
                self.process.terminate()
                await self.process.wait()
        return self.process.returncode


class AbmEnvironment(BaseEnvironment):
    """A local sandbox per trial, the agent's commands traced by ``abm run``.

    Keyword arguments (``--ek KEY=VALUE`` on the harbor command line):

    - ``abm``: the abm binary (default: ``$ABM``, else ``abm`` on ``PATH``);
    - ``enforce``: run the agent under ``abm run --enforce`` (default false);
    - ``policy``: a policy file for ``abm run --policy`` (repeatable as a list);
    - ``sandbox_dir``: where trial sandboxes are made (default: the system's
      temporary directory).
    """

    def __init__(
        self,
        *args,
        abm: str | None = None,
        enforce: bool | str = False,
        policy: str | list[str] | None = None,
        sandbox_dir: str | None = None,
        **kwargs,
    ):
        kwargs.setdefault("auto_mounting", True)
        self._abm = find_abm(abm)
        self._enforce = _truthy(enforce)
        self._policies = [policy] if isinstance(policy, str) else list(policy or [])
        self._sandbox_parent = Path(sandbox_dir) if sandbox_dir else Path(tempfile.gettempdir())
        self._dir: Path | None = None
        self._traced: _Sandbox | None = None
        self._plain: _Sandbox | None = None
        self._sealed: Path | None = None
        super().__init__(*args, **kwargs)

    @staticmethod
    def type() -> str:
        return "abm-local"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(mounted=True)

    def _validate_definition(self):
        if self.task_env_config.os.value != "linux":
            raise RuntimeError("abm_harbor:AbmEnvironment runs Linux tasks only")

    # --- paths -----------------------------------------------------------

    @property
    def workdir(self) -> str:
        return self.task_env_config.workdir or "/app"

    @property
    def trace_path(self) -> Path:
        return abm_dir(self.trial_paths.trial_dir.resolve()) / "trace.abmt"

    def _binds(self) -> list[dict]:
        assert self._dir is not None
        binds = [
            {"source": str(self._dir / "workdir"), "target": self.workdir},
            {"source": str(self._dir / "tests"), "target": "/tests"},
            {"source": str(self._dir / "solution"), "target": "/solution"},
            {"source": str(self._dir / "tmp"), "target": "/tmp"},
        ]
        for m in self._mounts:
            if m.get("type", "bind") != "bind":
                raise RuntimeError(f"abm_harbor:AbmEnvironment supports bind mounts only, not {m}")
            binds.append(
                {
                    "source": str(Path(m["source"]).resolve()),
                    "target": str(m["target"]),
                    "read_only": bool(m.get("read_only", False)),
                }
            )
        return binds

    def host_path(self, path: str) -> Path:
        """This machine's path of a path inside the sandbox."""
        p = PurePosixPath(path)
        if not p.is_absolute():
            p = PurePosixPath(self.workdir) / p
        best = None
        for b in self._binds():
            t = PurePosixPath(b["target"])
            if p == t or p.is_relative_to(t):
                if best is None or len(t.parts) > len(PurePosixPath(best["target"]).parts):
                    best = b
        if best is None:
            return Path(p)
        return Path(best["source"]).joinpath(*p.relative_to(best["target"]).parts)

    @property
    def workspace(self) -> Path:
        """The workdir as abm records it: the host's directory."""
        return self.host_path(self.workdir)

    # --- life cycle --------------------------------------------------------

    async def _spawn(self, name: str, traced: bool) -> _Sandbox:
        assert self._dir is not None
        sock = self._dir / f"{name}.sock"
        spec_path = self._dir / f"{name}.json"
        spec = {
            "root": str(self._dir / "root"),
            "binds": self._binds(),
            "socket": str(sock),
            "workdir": self.workdir,
            "env": BASE_ENV,
        }
        if traced:
            # The traced sandbox enters the untraced one's namespace and root.
            assert self._plain is not None
            spec["join_socket"] = str(self._plain.sock)
        Path(spec["root"]).mkdir(exist_ok=True)
        spec_path.write_text(json.dumps(spec, indent=2))
        server = [sys.executable, "-m", "abm_harbor.sandbox", str(spec_path)]
        if traced:
            adir = self.trace_path.parent
            adir.mkdir(parents=True, exist_ok=True)
            log = adir / "abm-run.log"
            cmd = [
                self._abm,
                "run",
                "--trace",
                str(self.trace_path),
                "--workspace",
                str(self.workspace),
                "--linger",
                "1",
            ]
            if self._enforce:
                cmd += ["--enforce", "--no-prompt"]
            for p in self._policies:
                cmd += ["--policy", p]
            cmd += ["--", *server]
            (adir / "run.json").write_text(
                json.dumps(
                    {
                        "abm": self._abm,
                        "trace": str(self.trace_path),
                        "workspace": str(self.workspace),
                        "workdir": self.workdir,
                        "enforce": self._enforce,
                        "policies": self._policies,
                        "command": cmd,
                    },
                    indent=2,
                )
            )
        else:
            log = self._dir / f"{name}.log"
            cmd = server
        env = dict(os.environ)
        # The sandbox imports this package: make it importable however it was installed.
        pkg_root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pkg_root, env.get("PYTHONPATH")]))
        with open(log, "wb") as logf:
            process = await asyncio.create_subprocess_exec(
                *cmd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=logf,
                stderr=logf,
                env=env,
                start_new_session=True,
            )
        sandbox = _Sandbox(sock, process, log)
        await sandbox.wait_ready(timeout=60)
        return sandbox

    async def start(self, force_build: bool) -> None:
        self._sandbox_parent.mkdir(parents=True, exist_ok=True)
        self._dir = Path(tempfile.mkdtemp(prefix=f"abm-harbor-{self.session_id}-", dir=self._sandbox_parent))
        for d in ("workdir", "tests", "solution", "tmp"):
            (self._dir / d).mkdir()
        (self._dir / "tmp").chmod(0o1777)
        for m in self._mounts:
            Path(m["source"]).mkdir(parents=True, exist_ok=True)
        # The task's files: environment/ (less the image's own files) into the workdir.
        if self.environment_dir.is_dir():
            for entry in self.environment_dir.iterdir():
                if entry.name in IMAGE_FILES:
                    continue
                dst = self._dir / "workdir" / entry.name
                if entry.is_dir():
                    shutil.copytree(entry, dst, symlinks=True)
                else:
                    shutil.copy2(entry, dst, follow_symlinks=False)
        self._plain = await self._spawn("plain", traced=False)
        setup = self.environment_dir / "setup.sh"
        if setup.is_file():
            shutil.copy2(setup, self._dir / "tmp" / "abm-harbor-setup.sh")
            res = await self._exec_in(self._plain, "sh /tmp/abm-harbor-setup.sh", self.workdir, None, 600, None)
            (self._dir / "tmp" / "abm-harbor-setup.sh").unlink()
            if res.return_code != 0:
                raise RuntimeError(
                    f"environment/setup.sh of {self.environment_name} exited {res.return_code}:\n"
                    f"{res.stdout or ''}{res.stderr or ''}"
                )
        if self.trace_path.exists():
            raise RuntimeError(f"{self.trace_path} exists already: a trial directory holds one trace")
        self._traced = await self._spawn("traced", traced=True)

    async def seal_trace(self) -> Path:
        """Ends the traced sandbox; abm seals the trace. Returns the trace's path."""
        if self._sealed is not None:
            return self._sealed
        if self._traced is None:
            raise RuntimeError("the environment was not started: no trace to seal")
        # abm terminates what the agent left running after --linger, then seals.
        status = await self._traced.shutdown(timeout=120)
        self._traced = None
        if not self.trace_path.exists():
            raise RuntimeError(
                f"abm run exited {status} without a trace:\n"
                f"{(abm_dir(self.trial_paths.trial_dir) / 'abm-run.log').read_text(errors='replace')[-4000:]}"
            )
        self._sealed = self.trace_path
        return self._sealed

    async def stop(self, delete: bool):
        try:
            if self._traced is not None:
                await self.seal_trace()
        finally:
            if self._plain is not None:
                await self._plain.shutdown(timeout=30)
                self._plain = None
            if delete and self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)

    # --- commands and files ----------------------------------------------

    async def _exec_in(self, sandbox, command, cwd, env, timeout_sec, user) -> ExecResult:
        req = {
            "op": "exec",
            "command": command,
            "cwd": cwd or self.workdir,
            "env": env or {},
            "user": user,
            "timeout_sec": timeout_sec,
        }
        reply = await sandbox.request(req, timeout=None)
        if "error" in reply:
            raise RuntimeError(f"sandbox: {reply['error']}")
        if reply.get("timed_out"):
            raise RuntimeError(f"Command timed out after {timeout_sec} seconds")
        return ExecResult(
            stdout=reply.get("stdout") or None,
            stderr=reply.get("stderr") or None,
            return_code=reply["return_code"],
        )

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        sandbox = self._traced or self._plain
        if sandbox is None:
            raise RuntimeError("the environment is not started")
        return await self._exec_in(
            sandbox, command, cwd, self._merge_env(env), timeout_sec, self._resolve_user(user)
        )

    async def upload_file(self, source_path: Path | str, target_path: str):
        dst = self.host_path(target_path)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source_path, dst)

    async def upload_dir(self, source_dir: Path | str, target_dir: str):
        shutil.copytree(source_dir, self.host_path(target_dir), symlinks=True, dirs_exist_ok=True)

    async def download_file(self, source_path: str, target_path: Path | str):
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(self.host_path(source_path), target_path)

    async def download_dir(self, source_dir: str, target_dir: Path | str):
        src = self.host_path(source_dir)
        if src.resolve() == Path(target_dir).resolve():
            return
        shutil.copytree(src, target_dir, symlinks=True, dirs_exist_ok=True)
