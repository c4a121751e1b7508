"""Loaded by Inspect through the `inspect_ai` entry point: registers the
`abm` sandbox type and the `abm_scorer`, so `sandbox="abm"` and
`--scorer abm_inspect/abm_scorer` work without an import."""

from ._sandbox import AbmSandboxEnvironment  # noqa: F401
from ._scorer import abm_scorer  # noqa: F401
from ._docker import AbmDockerSandboxEnvironment  # noqa: F401
