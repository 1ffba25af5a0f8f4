"""The `fleetq join` command line: arguments and file problems stop it before any cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.join_command import parse_overrides
from cli.main import main


def test_context_overrides_pair_a_cluster_with_a_context() -> None:
    assert parse_overrides(["manager=hub", "w1=ctx=with=equals"]) == {
        "manager": "hub",
        "w1": "ctx=with=equals",
    }
    for malformed in ("w1", "=ctx", "w1="):
        with pytest.raises(ValueError, match="write CLUSTER=CONTEXT"):
            parse_overrides([malformed])


def test_a_bad_fleet_file_exits_2_naming_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["join", "-f", str(tmp_path / "absent.yaml")]) == 2
    assert "cannot read fleet file" in capsys.readouterr().err
    typo = tmp_path / "clusters.yaml"
    typo.write_text("manager: {context: hub}\nworkers: [{name: w1, contxt: c}]\n")
    assert main(["join", "-f", str(typo)]) == 2
    assert "workers[0]: unknown field(s) contxt" in capsys.readouterr().err


def test_bad_arguments_exit_2_before_any_cluster_is_contacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = tmp_path / "clusters.yaml"
    fleet.write_text("manager: {context: hub}\nworkers: [{name: w1, context: c}]\n")
    assert main(["join", "-f", str(fleet), "--rotate-before", "soon"]) == 2
    assert "'soon' is not a duration" in capsys.readouterr().err
    assert main(["join", "-f", str(fleet), "--context-override", "w1"]) == 2
    assert "write CLUSTER=CONTEXT" in capsys.readouterr().err
    assert main(["join", "-f", str(fleet), "--parallel", "0"]) == 2
