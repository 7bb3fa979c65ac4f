"""A game whose mechanism cannot be calibrated to its epsilon ends in one sentence (issue 23 item 2:
`mechanism=dpsgd model=tiny mechanism.epsilon=1e9` hung after "job size", killed at 240 s)."""
from __future__ import annotations

import pytest
from clitools import run_cli


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", ["1e9", "1e300"])
def test_dpsgd_at_a_huge_epsilon_is_one_sentence_and_leaves_no_job_folder(epsilon, tmp_path):
    result = run_cli("prior=uniform", "mechanism=dpsgd", "model=tiny", "attack=model_attack", "trials=1",
                     f"mechanism.epsilon={epsilon}", cwd=tmp_path, timeout=240)
    lines = [line for line in result.stderr.splitlines() if line.strip() and "[INFO]" not in line]
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: mechanism.epsilon = {float(epsilon):g} cannot be calibrated for DP-SGD")
    assert "Traceback" not in result.stderr and not list(tmp_path.rglob("metrics.json"))
    assert not (tmp_path / "outputs" / "runs").exists() or not any((tmp_path / "outputs" / "runs").rglob(".hydra"))
