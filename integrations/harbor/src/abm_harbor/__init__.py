"""abm for Harbor: the agent's commands traced by abm, abm's verdict as the reward.

``--env abm_harbor:AbmEnvironment`` runs each trial in a local sandbox whose
agent phase is one ``abm run``; ``--verifier abm_harbor:AbmVerifier`` seals
the trace, checks it and judges it with ``abm oracle`` (docs/harbor.md).
"""

from abm_harbor.environment import AbmEnvironment
from abm_harbor.verifier import AbmVerifier

__all__ = ["AbmEnvironment", "AbmVerifier"]
