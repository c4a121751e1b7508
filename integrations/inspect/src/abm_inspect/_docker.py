"""The `abm-docker` sandbox: one container per sample, watched by the abm
daemon from its first process, one trace per sample.

Per sample: a fresh host directory, bind-mounted at `workdir` (the task
spec's `${workspace}` is the host directory, which is what the daemon
records as `path`; `container_path` is what the agent saw). Before the
container exists the daemon is told its name (`abm watch add NAME
--container NAME --workspace DIR`); `docker run -d` starts it and each
`exec()` is a `docker exec` into it. `seal()` removes the container; the
daemon seals the target's trace when the container's cgroup goes.

Plain `docker run`/`docker exec`, not Inspect's compose-based `docker`
sandbox (see docs/inspect.md, "Limits").
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from logging import getLogger
from pathlib import Path, PurePosixPath
from typing import Any, Literal, Union, overload

import anyio
from typing_extensions import override

from inspect_ai.util import (
    ExecResult,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    sandboxenv,
    subprocess,
)

from ._abm import (
    DEFAULT_SOCKET,
    SOCKET_ENV,
    AbmError,
    AbmSandboxConfig,
    abm_binary,
    merged_config,
)
from ._sandbox import AbmTracedSandbox, SealedTrace, _sample_name

logger = getLogger(__name__)

SEAL_TIMEOUT = 60


def _socket(config: AbmSandboxConfig) -> str:
    return config.socket or os.environ.get(SOCKET_ENV) or DEFAULT_SOCKET


@sandboxenv(name="abm-docker")
class AbmDockerSandboxEnvironment(AbmTracedSandbox):
    """A container per sample, watched by the abm daemon, one trace per sample."""

    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> AbmSandboxConfig:
        return AbmSandboxConfig(**config)

    @override
    @classmethod
    async def task_init(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None
    ) -> None:
        cfg = merged_config(config, None)
        abm = abm_binary(cfg.abm)
        if shutil.which("docker") is None:
            raise AbmError("abm-docker: docker is not installed (the Debian package docker.io)")
        status = await subprocess([abm, "status", "--json", "--socket", _socket(cfg)])
        if not status.success:
            raise AbmError(
                f"abm-docker needs a running abm daemon at {_socket(cfg)} "
                f"(`abm daemon`, or set the option `socket` / {SOCKET_ENV}): "
                f"{status.stderr.strip()}"
            )

    @override
    @classmethod
    async def sample_init(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        metadata: dict[str, Any],
    ) -> dict[str, SandboxEnvironment]:
        env = cls(task_name, merged_config(config, metadata))
        try:
            await env._start()
        except BaseException:
            await env._remove()
            env._cleanup_dir()
            raise
        return {"default": env}

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
            if not isinstance(env, AbmDockerSandboxEnvironment):
                continue
            try:
                await env.seal()
            except Exception as ex:
                logger.warning("abm-docker: could not seal the trace of %s: %s", env.name, ex)
            finally:
                await env._remove()
                env._cleanup_dir()

    def __init__(self, task_name: str, config: AbmSandboxConfig) -> None:
        super().__init__()
        if not config.image:
            raise AbmError(
                'abm-docker needs an image: sandbox=("abm-docker", AbmSandboxConfig(image="..."))'
            )
        self.config = config
        self.abm = abm_binary(config.abm)
        self.socket = _socket(config)
        self.name = "abm-inspect-" + _sample_name(task_name)
        self.workspace = Path(tempfile.mkdtemp(prefix="abm-inspect-ws-"))
        self.workdir = PurePosixPath(config.workdir)
        self._lock = anyio.Lock()
        self._sealed: SealedTrace | None = None
        self._log: list[str] = []

    async def _run(self, args: list[str]) -> ExecResult[str]:
        result = await subprocess(args)
        self._log.append(f"$ {' '.join(args)}\n{result.stdout}{result.stderr}")
        return result

    def _log_tail(self) -> str:
        return "".join(self._log)[-4000:]

    async def _start(self) -> None:
        add = [self.abm, "watch", "add", self.name, "--container", self.name]
        add += ["--workspace", str(self.workspace), "--socket", self.socket]
        if self.config.enforce:
            add.append("--enforce")
        r = await self._run(add)
        if not r.success:
            raise AbmError(f"abm watch add {self.name} failed: {r.stderr.strip()}")
        run = ["docker", "run", "-d", "--name", self.name]
        run += ["-v", f"{self.workspace}:{self.workdir}", "-w", str(self.workdir)]
        run += [*self.config.docker_args, self.config.image, *self.config.command]
        r = await self._run(run)
        if not r.success:
            raise AbmError(f"docker run {self.config.image} failed: {r.stderr.strip()}")

    async def _remove(self) -> None:
        await subprocess(["docker", "rm", "-f", self.name])

    def _cleanup_dir(self) -> None:
        shutil.rmtree(self.workspace, ignore_errors=True)

    async def _target(self) -> dict[str, Any] | None:
        r = await subprocess([self.abm, "status", "--json", "--socket", self.socket])
        if not r.success:
            raise AbmError(f"abm status --socket {self.socket} failed: {r.stderr.strip()}")
        found = None
        for t in json.loads(r.stdout).get("targets") or []:
            if t.get("name") == self.name:
                found = t
        return found

    async def seal(self) -> SealedTrace:
        """Remove the container and wait for the daemon to seal its trace."""
        async with self._lock:
            if self._sealed is not None:
                return self._sealed
            await self._remove()
            target = None
            with anyio.move_on_after(SEAL_TIMEOUT):
                while True:
                    target = await self._target()
                    if target is not None and target.get("state") not in ("active", "waiting"):
                        break
                    await anyio.sleep(0.2)
            if target is None or target.get("state") in ("active", "waiting"):
                # The daemon did not see the cgroup go: end the target.
                await self._run([self.abm, "watch", "remove", self.name, "--socket", self.socket])
                target = await self._target()
            if target is None or not target.get("trace"):
                raise AbmError(
                    f"the abm daemon at {self.socket} has no trace for {self.name}:\n"
                    f"{self._log_tail()}"
                )
            self._sealed = SealedTrace(
                path=Path(target["trace"]),
                log=Path(target["trace"]),
                workspace=self.workspace,
                abm_exit=None,
                abm=self.abm,
            )
            return self._sealed

    # -- SandboxEnvironment ------------------------------------------------

    def _container_path(self, path: str | None) -> str:
        if path is None:
            return str(self.workdir)
        p = PurePosixPath(path)
        return str(p if p.is_absolute() else self.workdir / p)

    def _host_path(self, file: str) -> Path | None:
        """The host path of a file under the mounted workdir, else None."""
        p = PurePosixPath(self._container_path(file))
        try:
            rel = p.relative_to(self.workdir)
        except ValueError:
            return None
        return self.workspace / rel

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
        args = ["docker", "exec", "-w", self._container_path(cwd)]
        if input is not None:
            args.append("-i")
        if user is not None:
            args += ["--user", user]
        for k, v in (env or {}).items():
            args += ["--env", f"{k}={v}"]
        args.append(self.name)
        return await subprocess(
            args + cmd,
            input=input,
            timeout=timeout,
            output_limit=SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE,
            concurrency=concurrency,
        )

    @override
    async def write_file(self, file: str, contents: str | bytes) -> None:
        host = self._host_path(file)
        data = contents.encode("utf-8") if isinstance(contents, str) else contents
        if host is not None:
            host.parent.mkdir(parents=True, exist_ok=True)
            host.write_bytes(data)
            return
        path = self._container_path(file)
        r = await subprocess(
            ["docker", "exec", "-i", self.name, "sh", "-c", 'mkdir -p "$(dirname "$1")" && cat > "$1"', "sh", path],
            input=data,
        )
        if not r.success:
            raise PermissionError(f"abm-docker: writing {path}: {r.stderr.strip()}")

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    @override
    async def read_file(self, file: str, text: bool = True) -> Union[str | bytes]:
        host = self._host_path(file)
        if host is not None:
            data = host.read_bytes()
        else:
            path = self._container_path(file)
            r = await subprocess(["docker", "exec", self.name, "cat", path], text=False)
            if not r.success:
                raise FileNotFoundError(f"abm-docker: reading {path}: {r.stderr!r}")
            data = r.stdout
        return data.decode("utf-8") if text else data
