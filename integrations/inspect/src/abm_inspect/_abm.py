"""Finding the `abm` binary and the options shared by the sandbox and the scorer."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

ABM_BIN_ENV = "ABM_BIN"
TRACE_DIR_ENV = "ABM_INSPECT_TRACE_DIR"
SOCKET_ENV = "ABM_SOCKET"
DEFAULT_SOCKET = "/run/abm/daemon.sock"
DEFAULT_TRACE_DIR = "abm-traces"


class AbmError(RuntimeError):
    """abm could not be found, started or run; the message says what to do."""


class AbmSandboxConfig(BaseModel):
    """Options of the `abm` sandbox (all optional).

    A sample's metadata can override them for that sample under the key
    `abm` (a dict with the same fields), e.g.
    `metadata={"abm": {"enforce": True, "policy": ["deny.toml"]}}`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    abm: str | None = None
    """The abm binary. Default: `$ABM_BIN`, else `abm` on `PATH`."""

    trace_dir: str | None = None
    """Where traces go. Default: `$ABM_INSPECT_TRACE_DIR`, else `./abm-traces`."""

    enforce: bool = False
    """Run under `abm run --enforce`: block what the policy denies."""

    enforce_backend: Literal["auto", "seccomp", "lsm"] = "auto"
    """`--enforce-backend` (with `enforce`)."""

    confirm_timeout: int | None = None
    """`--confirm-timeout` (with `enforce`): a `confirm` nobody answers is denied after this."""

    policy: tuple[str, ...] = ()
    """`--policy` files, merged in order. Default: abm's built-in pack."""

    sensitive: tuple[str, ...] = ()
    """`--sensitive` patterns added to the default set of sensitive files."""

    extra_args: tuple[str, ...] = ()
    """More `abm run` options, passed before `--` (`abm` sandbox)."""

    image: str | None = None
    """`abm-docker`: the image each sample's container runs (required there)."""

    socket: str | None = None
    """`abm-docker`: the abm daemon's control socket. Default: `$ABM_SOCKET`,
    else `/run/abm/daemon.sock`."""

    workdir: str = "/workspace"
    """`abm-docker`: where the sample's directory is mounted in the container."""

    command: tuple[str, ...] = ("tail", "-f", "/dev/null")
    """`abm-docker`: what the container runs while the sample's commands are exec'd into it."""

    docker_args: tuple[str, ...] = ()
    """`abm-docker`: more `docker run` options (`--network none`, ...)."""


def merged_config(config: Any, metadata: dict[str, Any] | None) -> AbmSandboxConfig:
    """The sandbox config with the sample's `metadata["abm"]` laid over it."""
    if config is None:
        base = AbmSandboxConfig()
    elif isinstance(config, AbmSandboxConfig):
        base = config
    elif isinstance(config, dict):
        base = AbmSandboxConfig(**config)
    elif isinstance(config, BaseModel):
        base = AbmSandboxConfig(**config.model_dump())
    else:
        raise AbmError(
            f"the abm sandbox takes an AbmSandboxConfig (or a dict of its fields), "
            f"not {config!r}: use sandbox=('abm', AbmSandboxConfig(...))"
        )
    over = (metadata or {}).get("abm")
    if over is None:
        return base
    if not isinstance(over, dict):
        raise AbmError(
            f'sample metadata "abm" must be a dict of AbmSandboxConfig fields, not {over!r}'
        )
    return AbmSandboxConfig(**{**base.model_dump(), **over})


def abm_binary(configured: str | None = None) -> str:
    """The abm binary to run: the config's, `$ABM_BIN`, or `abm` on `PATH`."""
    cand = configured or os.environ.get(ABM_BIN_ENV) or shutil.which("abm")
    if not cand:
        raise AbmError(
            "abm is not installed: install the abm package, put abm on PATH, "
            f"or set {ABM_BIN_ENV}=/path/to/abm"
        )
    path = Path(cand)
    if not path.is_file() or not os.access(path, os.X_OK):
        raise AbmError(
            f"abm binary {cand} does not exist or is not executable "
            f"(set {ABM_BIN_ENV} or the sandbox's `abm` option to the abm binary)"
        )
    return str(path.resolve())


def trace_dir(configured: str | None = None) -> Path:
    """The directory traces are written to (created when missing)."""
    d = Path(configured or os.environ.get(TRACE_DIR_ENV) or DEFAULT_TRACE_DIR)
    d = d.resolve()
    d.mkdir(parents=True, exist_ok=True)
    return d
