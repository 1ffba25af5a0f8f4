"""`fleetq dev ...` reaches devfleet through the `fleetq.commands` entry point, not an import."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest

from cli.main import COMMAND_GROUPS_ENTRY_POINT, build_parser, main


def test_the_dev_group_is_an_installed_entry_point() -> None:
    entries = {e.name: e.value for e in entry_points(group=COMMAND_GROUPS_ENTRY_POINT)}
    assert entries.get("dev") == "devfleet.dev_commands:register"


@pytest.mark.parametrize(
    ("argv", "handler"),
    [
        (["dev", "tools", "kwok"], "_tools"),
        (["dev", "up", "--workers", "3", "--lite"], "_up"),
        (["dev", "status"], "_status"),
        (["dev", "demo", "--short"], "_demo"),
        (["dev", "down", "--name", "x"], "_down"),
    ],
)
def test_dev_actions_parse_to_the_devfleet_handlers(argv: list[str], handler: str) -> None:
    args = build_parser().parse_args(argv)
    assert args.handler.__module__ == "devfleet.dev_commands"
    assert args.handler.__name__ == handler


def test_dev_status_of_a_fleet_that_is_not_running_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FLEETQ_HOME", str(tmp_path))
    assert main(["dev", "status", "--name", "no-such-fleet-here"]) == 1
    captured = capsys.readouterr()
    assert "is not running" in captured.out + captured.err
