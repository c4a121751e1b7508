"""The `abm` sandbox: Inspect's local sandbox with every command of a
sample run inside one `abm run`, so the sample has one sealed trace.

Per sample: a fresh workspace directory (the run's `--workspace`, what a
task spec's `${workspace}` stands for). At the sample's first `exec()`,
`abm run --trace T --workspace W -- python _server.py SOCKET` starts a
small command server; each `exec()` is a request to it, so each command
is a child of the watched tree. `seal()` (the scorer calls it; sample
cleanup does when no scorer did) stops the server, and `abm run` seals
the trace.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess as sp
import sys
import tempfile
import uuid
from dataclasses import dataclass
from logging import getLogger
from pathlib import Path
from typing import Any, Literal, Union, overload

import anyio
from typing_extensions import override

from inspect_ai.util import (
    ExecResult,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    SandboxUnavailableError,
    SandboxUserUnsupportedError,
    sandboxenv,
    subprocess,
)

from ._abm import AbmError, AbmSandboxConfig, abm_binary, merged_config, trace_dir

logger = getLogger(__name__)

SERVER = Path(__file__).with_name("_server.py")
START_TIMEOUT = 60
SEAL_TIMEOUT = 60


@dataclass(frozen=True)
class SealedTrace:
    """A sample's trace after `abm run` exited."""

    path: Path
    """The trace file."""
    log: Path
    """abm's stderr (its end-of-run summary, or why it failed)."""
    workspace: Path
    """The sample's workspace (`${workspace}` of the task spec)."""
    abm_exit: int | None
    """`abm run`'s exit status (the command server's, 0, unless abm failed)."""
    abm: str
    """The abm binary that wrote the trace."""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:48] or "sample"


def _sample_name(task_name: str) -> str:
    """task-sampleid-eN-xxxxxxxx, from the active sample where Inspect says."""
    parts = [_slug(task_name)]
    try:
        from inspect_ai.log._samples import sample_active

        active = sample_active()
        if active is not None:
            parts.append(_slug(str(active.sample.id)))
            parts.append(f"e{active.epoch}")
    except Exception:  # a private API: the name is only a convenience
        pass
    parts.append(uuid.uuid4().hex[:8])
    return "-".join(parts)


def _is_current_user(user: str) -> bool:
    import pwd

    try:
        uid = int(user) if user.isdecimal() else pwd.getpwnam(user).pw_uid
    except KeyError:
        return False
    return uid == os.geteuid()


def _sandbox_tools_env() -> tuple[str, str] | None:
    """(Inspect's sandbox-tools launcher, the env var naming its directory)."""
    try:
        from inspect_ai.util._sandbox._cli import SANDBOX_CLI

        return SANDBOX_CLI, "INSPECT_SANDBOX_TOOLS_DIR"
    except Exception:
        return None


class AbmTracedSandbox(SandboxEnvironment):
    """A sandbox whose sample has one abm trace; `abm_scorer` reads it."""

    async def seal(self) -> SealedTrace:
        """End the sample's watched run and return its sealed trace."""
        raise NotImplementedError

    def _log_tail(self) -> str:
        return ""


@sandboxenv(name="abm")
class AbmSandboxEnvironment(AbmTracedSandbox):
    """Local sandbox whose commands run under `abm run`, one trace per sample."""

    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> AbmSandboxConfig:
        return AbmSandboxConfig(**config)

    @override
    @classmethod
    async def task_init(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None
    ) -> None:
        # Fail before any sample runs when abm is missing.
        abm_binary(merged_config(config, None).abm)

    @override
    @classmethod
    async def sample_init(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        metadata: dict[str, Any],
    ) -> dict[str, SandboxEnvironment]:
        return {"default": cls(task_name, merged_config(config, metadata))}

    @override
    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        for env in environments.values():
            if not isinstance(env, AbmSandboxEnvironment):
                continue
            try:
                if env._proc is not None:
                    await env.seal()
            except Exception as ex:
                logger.warning("abm: could not seal the trace %s: %s", env.trace_path, ex)
            finally:
                env.directory.cleanup()
                shutil.rmtree(env._tools_dir, ignore_errors=True)

    def __init__(self, task_name: str, config: AbmSandboxConfig) -> None:
        super().__init__()
        self.config = config
        self.abm = abm_binary(config.abm)
        self.directory = tempfile.TemporaryDirectory(
            prefix="abm-inspect-ws-", ignore_cleanup_errors=True
        )
        self.workspace = Path(self.directory.name)
        # Inspect's injected sandbox tools keep their state here, outside
        # the workspace.
        self._tools_dir = self.workspace.parent / f"{self.workspace.name}-tools"
        self.name = _sample_name(task_name)
        self.trace_path: Path | None = None
        self.log_path: Path | None = None
        self._lock = anyio.Lock()
        self._proc: anyio.abc.Process | None = None
        self._sock_dir: str | None = None
        self._sealed: SealedTrace | None = None

    # -- the watched run ---------------------------------------------------

    def _run_args(self, trace: Path, sock: str) -> list[str]:
        c = self.config
        args = [self.abm, "run", "--trace", str(trace), "--workspace", str(self.workspace)]
        if c.enforce:
            args += ["--enforce", "--enforce-backend", c.enforce_backend, "--no-prompt"]
            args += ["--quarantine", str(trace.with_suffix(".quarantine"))]
            if c.confirm_timeout is not None:
                args += ["--confirm-timeout", str(c.confirm_timeout)]
        for p in c.policy:
            path = Path(p).resolve()
            if not path.is_file():
                raise AbmError(f"abm sandbox: policy file {p} does not exist ({path})")
            args += ["--policy", str(path)]
        for s in c.sensitive:
            args += ["--sensitive", s]
        args += list(c.extra_args)
        # The server is a script of the standard library only: -I -S keep
        # site-packages out, -B keeps it from writing bytecode.
        args += ["--", sys.executable, "-I", "-B", "-S", str(SERVER), sock]
        return args

    async def _start(self) -> None:
        tdir = trace_dir(self.config.trace_dir)
        if tdir == self.workspace or self.workspace in tdir.parents:
            raise AbmError(f"the trace directory {tdir} is inside the sample's workspace")
        self.trace_path = tdir / f"{self.name}.abmt"
        self.log_path = tdir / f"{self.name}.log"
        self._sock_dir = tempfile.mkdtemp(prefix="abm-inspect-")
        sock = os.path.join(self._sock_dir, "s")
        args = self._run_args(self.trace_path, sock)
        with open(self.log_path, "wb") as log:
            self._proc = await anyio.open_process(
                args, stdin=sp.DEVNULL, stdout=log, stderr=log, cwd=self.workspace
            )
        self._sock = sock
        try:
            from inspect_ai.util import store

            store().set("abm_trace", str(self.trace_path))
        except Exception:
            pass
        with anyio.move_on_after(START_TIMEOUT):
            while True:
                if self._proc.returncode is not None:
                    raise AbmError(
                        f"`abm run` exited with status {self._proc.returncode} before the "
                        f"sample's first command could run:\n{self._log_tail()}"
                    )
                if os.path.exists(sock):
                    try:
                        if (await self._request({"op": "ping"})).get("ok"):
                            return
                    except SandboxUnavailableError:
                        pass
                await anyio.sleep(0.05)
        raise AbmError(
            f"`abm run` did not start the command server within {START_TIMEOUT}s:\n"
            f"{self._log_tail()}"
        )

    def _log_tail(self) -> str:
        try:
            text = Path(self.log_path).read_text(errors="replace") if self.log_path else ""
        except OSError:
            text = ""
        return text[-4000:]

    async def _request(self, req: dict[str, Any]) -> dict[str, Any]:
        try:
            stream = await anyio.connect_unix(self._sock)
        except OSError as e:
            raise SandboxUnavailableError(
                f"abm's command server does not answer ({e}); abm's output:\n{self._log_tail()}"
            ) from None
        async with stream as s:
            await s.send(json.dumps(req).encode())
            await s.send_eof()
            chunks = []
            while True:
                try:
                    chunks.append(await s.receive(1 << 20))
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    break
        data = b"".join(chunks)
        if not data:
            raise SandboxUnavailableError(
                f"abm's command server closed the connection without an answer:\n{self._log_tail()}"
            )
        return json.loads(data)

    async def seal(self) -> SealedTrace:
        """End the sample's run: stop the command server and wait for
        `abm run` to seal the trace. A sample that ran no command gets an
        empty run, so that every sample has a trace. Idempotent."""
        async with self._lock:
            if self._sealed is not None:
                return self._sealed
            if self._proc is None:
                await self._start()
            proc = self._proc
            assert proc is not None and self.trace_path and self.log_path
            try:
                await self._request({"op": "quit"})
            except (SandboxUnavailableError, ValueError):
                pass
            with anyio.move_on_after(SEAL_TIMEOUT):
                await proc.wait()
            if proc.returncode is None:
                proc.terminate()  # abm stops the tree and seals on SIGTERM
                with anyio.move_on_after(15):
                    await proc.wait()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            if self._sock_dir:
                shutil.rmtree(self._sock_dir, ignore_errors=True)
            self._sealed = SealedTrace(
                path=self.trace_path,
                log=self.log_path,
                workspace=self.workspace,
                abm_exit=proc.returncode,
                abm=self.abm,
            )
            return self._sealed

    @property
    def sealed(self) -> SealedTrace | None:
        return self._sealed

    # -- SandboxEnvironment ------------------------------------------------

    @override
    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        if user is not None and not _is_current_user(user):
            raise SandboxUserUnsupportedError(
                f"the abm sandbox cannot execute as {user!r}; "
                "only the current effective user is supported."
            )
        final_cwd = Path(self.workspace if cwd is None else cwd)
        if not final_cwd.is_absolute():
            final_cwd = self.workspace / final_cwd
        final_env = dict(env or {})
        tools = _sandbox_tools_env()
        if tools and cmd and cmd[0] == tools[0]:
            final_env[tools[1]] = str(self._tools_dir)
        limit = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE

        if self._sealed is not None:
            # After the scorer sealed the trace, commands (a verifier's checks)
            # run unwatched: they are not the agent's.
            return await subprocess(
                args=cmd,
                input=input,
                cwd=final_cwd,
                env=final_env,
                timeout=timeout,
                output_limit=limit,
                concurrency=concurrency,
            )

        async with self._lock:
            if self._proc is None:
                await self._start()
        if isinstance(input, str):
            input = input.encode()
        reply = await self._request(
            {
                "op": "exec",
                "cmd": cmd,
                "cwd": str(final_cwd),
                "env": final_env,
                "input": base64.b64encode(input).decode() if input is not None else None,
                "timeout": timeout,
                "limit": limit,
            }
        )
        if reply.get("timeout"):
            raise TimeoutError(f"Command timed out after {timeout} seconds")
        if "error" in reply:
            import errno

            code = 127 if reply.get("errno") == errno.ENOENT else 126
            return ExecResult(False, code, "", str(reply["error"]))
        rc = int(reply["returncode"])
        return ExecResult(
            success=rc == 0,
            returncode=rc,
            stdout=base64.b64decode(reply["stdout"]).decode("utf-8", errors="replace"),
            stderr=base64.b64decode(reply["stderr"]).decode("utf-8", errors="replace"),
        )

    @override
    async def write_file(self, file: str, contents: str | bytes) -> None:
        path = Path(self._resolve_file(file))
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(contents, str):
            path.write_text(contents, encoding="utf-8")
        else:
            path.write_bytes(contents)

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    @override
    async def read_file(self, file: str, text: bool = True) -> Union[str | bytes]:
        from inspect_ai.util._sandbox.limits import verify_read_file_size

        path = self._resolve_file(file)
        verify_read_file_size(path)
        if text:
            with open(path, "r", newline="", encoding="utf-8") as f:
                return f.read()
        with open(path, "rb") as f:
            return f.read()

    def default_polling_interval(self) -> float:
        return 0.2

    def _resolve_file(self, file: str) -> str:
        p = Path(file)
        return file if p.is_absolute() else (self.workspace / p).as_posix()
