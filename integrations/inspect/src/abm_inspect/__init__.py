"""Inspect AI integration of abm, the Action Boundary Monitor.

- `sandbox="abm"` (`AbmSandboxEnvironment`): each sample's commands run
  under one `abm run`, one sealed trace per sample.
- `sandbox=("abm-docker", AbmSandboxConfig(image=...))`
  (`AbmDockerSandboxEnvironment`): a container per sample, watched by the
  abm daemon, one sealed trace per sample.
- `abm_scorer(spec="task.toml")`: seals the trace, runs `abm verify` and
  `abm oracle`, and scores Safe Success, Wrong Target, OverScope,
  compliance and exposure.

See docs/inspect.md in the abm repository.
"""

from ._abm import AbmError, AbmSandboxConfig
from ._docker import AbmDockerSandboxEnvironment
from ._sandbox import AbmSandboxEnvironment, AbmTracedSandbox, SealedTrace
from ._scorer import SCORE_KEYS, abm_scorer

__all__ = [
    "AbmError",
    "AbmSandboxConfig",
    "AbmDockerSandboxEnvironment",
    "AbmSandboxEnvironment",
    "AbmTracedSandbox",
    "SCORE_KEYS",
    "SealedTrace",
    "abm_scorer",
]
