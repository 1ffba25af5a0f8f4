"""The tool builder's bookkeeping: cache layout, stamps, idempotence and loud failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from devfleet import toolchain
from devfleet.toolchain import TOOLS, ToolBuildError, build_tools, is_current, tool


@pytest.fixture
def tools_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FLEETQ_TOOLS_DIR", str(tmp_path))
    return tmp_path


def test_every_tool_has_a_wrapper_module_with_pinned_versions() -> None:
    for go_tool in TOOLS:
        go_mod = (go_tool.module_dir / "go.mod").read_text()
        assert (go_tool.module_dir / "go.sum").exists(), go_tool.name
        assert go_tool.version.lstrip("v") in go_mod.replace("v0.36.", "v1.36."), go_tool.name
        assert set(go_tool.checks) == set(go_tool.binaries)


def test_kubernetes_is_version_stamped() -> None:
    flags = " ".join(tool("kubernetes").ldflags)
    assert "k8s.io/component-base/version.gitVersion=v1.36.3" in flags
    assert "gitMinor=36" in flags


def test_cache_is_versioned_and_outside_the_repo(tools_dir: Path) -> None:
    etcd = tool("etcd")
    assert etcd.install_dir == tools_dir / f"etcd-{etcd.version}"
    assert toolchain.REPO_ROOT not in etcd.install_dir.parents


def test_each_upstream_kueue_version_is_its_own_tool_and_cache_directory(tools_dir: Path) -> None:
    tools = [toolchain.kueue_tool(version) for version in toolchain.KUEUE_VERSIONS]
    assert [t.name for t in tools] == ["kueue", "kueue-v0.17"]
    assert [t.install_dir for t in tools] == [
        tools_dir / "kueue-v0.19.2",
        tools_dir / "kueue-v0.17.0",
    ]
    assert [t.module_dir.name for t in tools] == ["kueue", "kueue-v0.17"]
    for go_tool in tools:
        assert f"sigs.k8s.io/kueue {go_tool.version}" in (go_tool.module_dir / "go.mod").read_text()
        assert go_tool.checks["minimalkueue"].expect == f"sigs.k8s.io/kueue\t{go_tool.version}"
    # A bare binary name means the yardstick version.
    assert toolchain.binary_path("minimalkueue") == tools[0].binary("minimalkueue")
    with pytest.raises(KeyError, match=r"v0\.18\.0"):
        toolchain.kueue_tool("v0.18.0")


def test_a_built_tool_with_a_matching_stamp_is_skipped(tools_dir: Path) -> None:
    helm = tool("helm")
    helm.install_dir.mkdir(parents=True)
    (helm.install_dir / "helm").write_text("#!/bin/sh\n")
    assert not is_current(helm)  # no stamp yet
    (helm.install_dir / ".stamp").write_text(helm.stamp() + "\n")
    assert is_current(helm)
    lines: list[str] = []
    report = build_tools(["helm"], progress=lines.append)
    assert report.skipped == ["helm"] and report.built == {}
    assert "already built" in lines[0]


def test_a_changed_wrapper_module_invalidates_the_stamp(tools_dir: Path) -> None:
    helm = tool("helm")
    helm.install_dir.mkdir(parents=True)
    (helm.install_dir / "helm").write_text("")
    (helm.install_dir / ".stamp").write_text("0123456789abcdef\n")
    assert not is_current(helm)


def test_unknown_tools_are_refused(tools_dir: Path) -> None:
    with pytest.raises(ToolBuildError, match="unknown tools: nope"):
        build_tools(["nope"], progress=lambda _: None)


def test_a_binary_without_the_expected_version_fails_loudly(tools_dir: Path) -> None:
    etcd = tool("etcd")
    etcd.install_dir.mkdir(parents=True)
    fake = etcd.install_dir / "etcd"
    fake.write_text("#!/bin/sh\necho 'etcd Version: 3.4.0'\n")
    fake.chmod(0o755)
    with pytest.raises(ToolBuildError, match=r"printed no '3\.6"):
        toolchain.check_version(etcd, "etcd")


def test_tools_build_two_at_a_time_and_a_failure_surfaces_after_the_others(
    tools_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    import time

    running, peak = 0, 0
    lock = threading.Lock()

    def fake_build(go_tool: toolchain.GoTool, progress: toolchain.Progress) -> float:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.2)
        with lock:
            running -= 1
        if go_tool.name == "etcd":
            raise ToolBuildError("etcd: go build failed")
        return 1.0

    monkeypatch.setattr(toolchain, "build_tool", fake_build)
    monkeypatch.delenv("FLEETQ_TOOL_JOBS", raising=False)
    with pytest.raises(ToolBuildError, match="etcd: go build failed"):
        build_tools(["etcd", "kwok", "helm"], progress=lambda _: None)
    assert peak == 2

    monkeypatch.setenv("FLEETQ_TOOL_JOBS", "1")
    peak = 0
    report = build_tools(["kwok", "helm"], progress=lambda _: None)
    assert peak == 1 and report.built == {"kwok": 1.0, "helm": 1.0}


def test_a_patched_build_patches_a_writable_copy_and_replaces_the_module_with_it(
    tools_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, modules = tmp_path / "home", tmp_path / "wrappers"
    source = home / "go" / "pkg" / "mod" / "example.com" / "m@v1.0.0"
    source.mkdir(parents=True)
    (source / "go.mod").write_text("module example.com/m\n")
    (source / "client.go").write_text("package m\n\nconst QPS = 5\n")
    source.chmod(0o555)  # as read-only as the module cache
    wrapper = modules / "m-patched"
    wrapper.mkdir(parents=True)
    (wrapper / "go.mod").write_text("module fleetq.dev/tools/m-patched\n")
    (wrapper / "go.sum").write_text("")
    (wrapper / "budget.patch").write_text(
        "--- a/client.go\n+++ b/client.go\n@@ -1,3 +1,3 @@\n package m\n \n-const QPS = 5\n"
        "+const QPS = 50\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(toolchain, "GO_MODULES_DIR", modules)
    go_tool = toolchain.GoTool(
        name="m-patched",
        version="v1.0.0",
        packages=("example.com/m",),
        binaries=(),
        checks={},
        module_patch=toolchain.ModulePatch("example.com/m", "v1.0.0", "budget.patch"),
    )
    staging = tmp_path / "staging"
    staging.mkdir()
    for _ in range(2):  # a second build replaces the first copy
        flags = toolchain.prepare_patched_copy(go_tool, staging, lambda _: None)
    copy = tools_dir / "patched" / "m@v1.0.0"
    assert (copy / "client.go").read_text() == "package m\n\nconst QPS = 50\n"
    assert (source / "client.go").read_text() == "package m\n\nconst QPS = 5\n"
    assert flags == [f"-modfile={staging / 'build.mod'}"]
    assert f"replace example.com/m v1.0.0 => {copy}" in (staging / "build.mod").read_text()
    assert (staging / "build.sum").exists()
    source.chmod(0o755)


def test_two_runs_building_one_tool_at_once_build_it_once(
    tools_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two checkouts share the tool cache; the second waits for the first's build."""
    import threading
    import time

    builds: list[str] = []

    def fake_build(go_tool: toolchain.GoTool, progress: toolchain.Progress) -> float:
        builds.append(go_tool.name)
        time.sleep(0.2)
        go_tool.install_dir.mkdir(parents=True, exist_ok=True)
        (go_tool.install_dir / "helm").write_text("#!/bin/sh\n")
        (go_tool.install_dir / ".stamp").write_text(go_tool.stamp() + "\n")
        return 1.0

    monkeypatch.setattr(toolchain, "build_tool", fake_build)
    lines: list[str] = []
    runs = [
        threading.Thread(target=build_tools, args=(["helm"],), kwargs={"progress": lines.append})
        for _ in range(2)
    ]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    assert builds == ["helm"]
    assert any("built meanwhile by another run" in line for line in lines)
