"""``AbmVerifier``: abm's verdict on the agent's trace as the trial's reward.

It seals the trial's trace (the agent's phase is over), runs the task's own
tests as Harbor's verifier does (untraced), checks the trace with ``abm
verify``, judges it with ``abm oracle`` against the task's abm spec, and
returns the signals as Harbor rewards. Files in the trial's ``verifier/``:

- ``reward.json``: the rewards Harbor records (numbers only);
- ``abm-verdict.json``: the oracle's verdict, evidence included;
- ``abm-verify.json``: ``abm verify --json`` of the trace;
- ``abm.json``: the trace's path and final digest, whether it verified, the
  workspace judged and the rewards;
- ``tests-reward.json``: the task tests' own reward file, when they wrote one.
"""

from __future__ import annotations

import json
from pathlib import Path

from harbor.models.verifier.result import VerifierResult
from harbor.verifier.base import BaseVerifier
from harbor.verifier.verifier import Verifier

from abm_harbor.abm import run
from abm_harbor.environment import _truthy, abm_dir

# `abm oracle` exits 3 when it refuses a trace (broken, unsealed, not authenticated).
REFUSED = 3


def root_prefix(abm: str, trace: str) -> str:
    """Where this process's root directory lies in the paths abm records.

    abm records every path as the host sees it, and a process whose root is
    elsewhere (a chroot) also with ``container_path``, its own view. When
    Harbor itself runs in a chroot, the workspace it knows is in its own
    view; the trace's first exec (the sandbox, started from Harbor's root)
    gives the prefix that makes it the host's: "" when not chrooted.
    """
    records = run([abm, "trace", "cat", trace], "abm trace cat").stdout
    for line in records.splitlines():
        r = json.loads(line)
        if r.get("type") != "event" or r.get("op") != "exec":
            continue
        path, seen = r.get("path") or "", r.get("container_path")
        if seen and path.endswith(seen) and path != seen:
            return path[: -len(seen)]
        return ""
    return ""


class AbmVerifier(BaseVerifier):
    """Keyword arguments (``--verifier-kwarg KEY=VALUE``):

    - ``spec``: the abm task spec, relative to the task directory (default
      ``tests/abm.toml``) or absolute;
    - ``reward_of``: ``abm oracle --reward-of`` (default ``safe_success``);
    - ``tests``: also run the task's tests (default true); the reward is then
      abm's reward times the tests' reward, and the tests' reward is ``tests``;
    - ``key``: the key file of a signed trace, for ``abm verify`` and ``abm oracle``.
    """

    def __init__(
        self,
        *,
        spec: str = "tests/abm.toml",
        reward_of: str | None = None,
        tests: bool | str = True,
        key: str | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._spec = spec
        self._reward_of = reward_of
        self._tests = _truthy(tests)
        self._key = key

    def _spec_path(self) -> Path:
        p = Path(self._spec)
        if not p.is_absolute():
            p = self.task.paths.task_dir / p
        if not p.is_file():
            raise FileNotFoundError(
                f"abm task spec {p} not found: write one (docs/oracle.md) or name it with "
                "--verifier-kwarg spec=PATH"
            )
        return p

    async def _run_tests(self) -> dict[str, float | int] | None:
        if not self._tests:
            return None
        inner = Verifier(
            task=self.task,
            trial_paths=self.trial_paths,
            environment=self.environment,
            override_env=self.override_env,
            logger=self.logger,
            verifier_env=self.verifier_env,
            step_name=self.step_name,
            include_logs=self.include_logs,
            exclude_logs=self.exclude_logs,
        )
        result = await inner.verify()
        own = self.trial_paths.reward_json_path
        if own.exists():
            own.rename(own.with_name("tests-reward.json"))
        return result.rewards or {}

    async def verify(self) -> VerifierResult:
        spec = self._spec_path()
        seal = getattr(self.environment, "seal_trace", None)
        if seal is not None:
            await seal()
        info_path = abm_dir(self.trial_paths.trial_dir) / "run.json"
        if not info_path.is_file():
            raise RuntimeError(
                f"no abm trace for this trial ({info_path} is missing): run the trial in "
                "the abm environment, --env abm_harbor:AbmEnvironment"
            )
        info = json.loads(info_path.read_text())
        abm, trace = info["abm"], info["trace"]
        workspace = root_prefix(abm, trace) + info["workspace"]

        tests = await self._run_tests()

        vdir = self.trial_paths.verifier_dir
        vdir.mkdir(parents=True, exist_ok=True)
        key = ["--key", self._key] if self._key else []
        checked = run([abm, "verify", "--json", *key, trace], "abm verify", ok=(0, 1))
        (vdir / "abm-verify.json").write_text(checked.stdout)
        report = json.loads(checked.stdout) if checked.stdout.strip() else {}
        verified = checked.returncode == 0

        verdict_path, reward_path = vdir / "abm-verdict.json", vdir / "abm-reward.json"
        argv = [abm, "oracle", "--task", str(spec), "--workspace", workspace, *key]
        argv += ["--output", str(verdict_path), "--reward", str(reward_path)]
        if self._reward_of:
            argv += ["--reward-of", self._reward_of]
        judged = run([*argv, trace], "abm oracle", ok=(0, REFUSED))
        if judged.returncode == REFUSED:
            self.logger.warning(f"abm oracle refused the trace {trace}: {judged.stderr.strip()}")
            rewards: dict[str, float | int] = {"reward": 0}
            verified = False
        else:
            rewards = json.loads(reward_path.read_text())
        rewards["trace_verified"] = int(verified)
        if tests is not None:
            rewards["tests"] = tests.get("reward", 0)
            for k, v in tests.items():
                if k != "reward":
                    rewards[f"tests_{k}"] = v
            rewards["reward"] = rewards["reward"] * rewards["tests"]

        (vdir / "reward.json").write_text(json.dumps(rewards, indent=2, sort_keys=True) + "\n")
        summary = {
            "trace": trace,
            "final_digest": report.get("final_digest"),
            "verified": verified,
            "workspace": workspace,
            "spec": str(spec),
            "verdict": str(verdict_path),
            "rewards": rewards,
        }
        (vdir / "abm.json").write_text(json.dumps(summary, indent=2) + "\n")
        self.logger.info(
            f"abm: reward {rewards['reward']} (safe_success {rewards.get('safe_success')}, "
            f"wrong_target {rewards.get('wrong_target')}, over_scope {rewards.get('over_scope')}); "
            f"trace {trace}, final digest {summary['final_digest']}"
        )
        return VerifierResult(rewards=rewards)
