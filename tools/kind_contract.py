"""An import-linter contract type for job-kind packages: each imports only what a kind may.

The stock contracts cannot say "every subpackage of `integrations` except `framework`": module
expressions have wildcards but no exclusions, and a kind must be free to import the framework
and the helper modules beside it while never importing a sibling kind. This contract finds the
kinds itself — every package directly inside `container` that is not listed in `shared` — so a
new kind (`integrations/jobset/`) is held to the rule the moment its folder exists, without
editing the configuration.

A kind's module may import, directly:
- modules of its own kind package;
- a `shared` package of the container (the framework) and the container's top-level modules
  (`integrations/*.py` helpers);
- modules inside `allowed_modules` (`core`) that are not inside `forbidden_modules`
  (`core.manager`, `core.kube`);
- anything outside the root packages (standard library, third-party packages).
Any other import of a root package's module breaks the contract: another kind, the manager
runtime, `hub`, `worker_agent`, `cli`, `devfleet`, `bench`. Only direct imports count, since the
manager's registry imports every kind and a kind imports the framework: a chain through them is
by design.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from grimp import ImportGraph
from importlinter import Contract, ContractCheck, fields, output
from importlinter.domain.imports import Module


@dataclass(frozen=True, slots=True)
class _Violation:
    importer: str
    imported: str
    line_numbers: tuple[int, ...]
    why: str


class KindPackagesContract(Contract):
    """Each kind package inside `container` imports only the framework, helpers and `core`."""

    type_name = "kind_packages"

    container = fields.ModuleField()
    shared = fields.SetField(subfield=fields.ModuleField())
    allowed_modules = fields.SetField(subfield=fields.ModuleField())
    forbidden_modules = fields.SetField(subfield=fields.ModuleField(), required=False)

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        # The fields hold parsed values once the contract is built (import-linter's design).
        container = cast(Module, self.container)
        shared = set(cast(set[Module], self.shared))
        allowed = set(cast(set[Module], self.allowed_modules))
        forbidden = set(cast(set[Module] | None, self.forbidden_modules) or ())
        roots = [Module(name) for name in self.session_options["root_packages"]]

        kinds = sorted(_kind_packages(container, shared, graph), key=str)
        helpers = {
            Module(child)
            for child in graph.find_children(container.name)
            if Module(child) not in kinds and Module(child) not in shared
        }
        output.verbose_print(verbose, f"Kind packages in {container}: {', '.join(map(str, kinds))}")

        violations: list[_Violation] = []
        for kind in kinds:
            for importer in sorted({kind.name} | graph.find_descendants(kind.name)):
                for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                    target = Module(imported)
                    if not any(_within(target, root) for root in roots):
                        continue  # standard library or third-party
                    why = _why_not_allowed(
                        target, kind, kinds, container, shared, helpers, allowed, forbidden
                    )
                    if why is None:
                        continue
                    details = graph.get_import_details(importer=importer, imported=imported)
                    lines = tuple(sorted(d["line_number"] for d in details))
                    violations.append(_Violation(importer, imported, lines, why))

        return ContractCheck(
            kept=not violations,
            metadata={"kinds": [str(k) for k in kinds], "violations": violations},
        )

    def render_broken_contract(self, check: ContractCheck) -> None:
        for violation in check.metadata["violations"]:
            lines = ", ".join(f"l.{n}" for n in violation.line_numbers)
            output.print_error(
                f"{violation.importer} -> {violation.imported} ({lines}): {violation.why}",
                bold=False,
            )
        output.new_line()


def _kind_packages(container: Module, shared: set[Module], graph: ImportGraph) -> set[Module]:
    """The packages directly inside `container` that are not `shared`: one per job kind."""
    kinds = set()
    for child in graph.find_children(container.name):
        module = Module(child)
        if module in shared:
            continue
        if graph.find_children(child) or _is_package_on_disk(child):
            kinds.add(module)
    return kinds


def _is_package_on_disk(name: str) -> bool:
    """A package with only an `__init__.py` has no children in the graph; the disk tells."""
    top, _, rest = name.partition(".")
    spec = importlib.util.find_spec(top)  # a top-level lookup imports nothing
    if spec is None or not spec.submodule_search_locations:
        return False
    return any(
        (Path(location, *rest.split(".")) / "__init__.py").is_file()
        for location in spec.submodule_search_locations
    )


def _within(module: Module, package: Module) -> bool:
    return module == package or module.is_descendant_of(package)


def _why_not_allowed(
    target: Module,
    kind: Module,
    kinds: list[Module],
    container: Module,
    shared: set[Module],
    helpers: set[Module],
    allowed: set[Module],
    forbidden: set[Module],
) -> str | None:
    """None when `kind` may import `target`, else the reason it may not."""
    if _within(target, kind):
        return None
    other = next((k for k in kinds if _within(target, k)), None)
    if other is not None:
        return f"{other} is another kind's package; share code through the framework"
    if target == container or any(_within(target, s) for s in shared) or target in helpers:
        return None
    closed = next((f for f in sorted(forbidden, key=str) if _within(target, f)), None)
    if closed is not None:
        return f"a kind may not import {closed}"
    if any(_within(target, a) for a in allowed):
        return None
    open_to = ", ".join(sorted(map(str, shared | allowed)))
    return f"a kind imports only its own modules, {container}'s helper modules and {open_to}"
