"""Inspect AI integration of abm, the Action Boundary Monitor.

- `sandbox="abm"` (`AbmSandboxEnvironment`): each sample's commands run
  under one `abm run`, one sealed trace per sample.
- `abm_scorer(task="task.toml")`: seals the trace, runs `abm verify` and
  `abm oracle`, and scores Safe Success, Wrong Target, OverScope,
  compliance and exposure.

See docs/inspect.md in the abm repository.
"""

from ._abm import AbmError, AbmSandboxConfig
from ._sandbox import AbmSandboxEnvironment, SealedTrace
from ._scorer import SCORE_KEYS, abm_scorer

__all__ = [
    "AbmError",
    "AbmSandboxConfig",
    "AbmSandboxEnvironment",
    "SCORE_KEYS",
    "SealedTrace",
    "abm_scorer",
]
