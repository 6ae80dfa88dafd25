"""The layer rule of docs/ARCHITECTURE.md, kept by a tool (`make lint`, issue 27).

kstream's modules are stacked in layers, each importing only the layers below it:

    ground (errors, config/, confluent shapes) < log.storage < log.cluster < log.transactions
    < log (the engine's face) < groups | tiering < client (and kstream.admin) < source | sink
    < data_source < mirror < tools (monitor < perf < web < cli) < kstream/__init__, pyspark_kstream

This script reads every module under the given source roots (default: ``src``) with ``ast``
and fails (exit 1, one line per violation: ``file:line: import: rule``) on

- an upward import: a kstream module importing one of a higher layer;
- a sibling import: source <-> sink (siblings of one layer that must not see each other);
- an import circle between rooms (packages: log.storage, log.cluster, groups, client, ...)
  or between modules, made of module-level imports;
- a function-level import of a kstream module: any import not at a module's top level
  (inside a def, a class, a try, an if). Module-level ``if TYPE_CHECKING:`` blocks are fine
  (they never run, so they make no circle either), and lazy imports of heavy third-party
  packages (pyspark, deltalake, fastapi, pandas, ...) stay allowed, since they are not
  kstream modules. A ``TYPE_CHECKING`` import still may not go up or across: a type from
  a higher layer is named by its shape (a Protocol) below it.

A string constant naming a kstream module (the maps handed to ``lazy_exports`` by the
package faces, ``kstream/__init__``, ``kstream/admin/__init__``, ``kstream/log/__init__``)
counts as a lazy reference: it may name modules in its own layer or below.
``from kstream.log.storage import format`` imports ``kstream.log.storage.format``.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# (module prefix, rank, sibling group). The longest matching prefix wins; equal ranks
# with different sibling groups must not import each other.
LAYERS: tuple[tuple[str, float, str], ...] = (
    ("kstream", 0, ""),  # the ground floor: any kstream/*.py leaf, config/, jars/
    ("kstream.log.storage", 1, ""),
    ("kstream.log.cluster", 2, ""),
    ("kstream.log.transactions", 3, ""),
    ("kstream.log", 4, ""),  # the engine's face: log/__init__ and log/*.py
    ("kstream.groups", 5, ""),
    ("kstream.tiering", 5, "tiering"),  # beside groups (both write Delta tables), neither sees the other
    ("kstream.client", 6, ""),
    ("kstream.admin", 6, ""),
    ("kstream.source", 7, "source"),
    ("kstream.sink", 7, "sink"),
    ("kstream.data_source", 8, ""),
    ("kstream.mirror", 8.5, ""),  # kstream <-> Apache Kafka (issue 23): the client API and confluent-kafka
    ("kstream.tools", 9, ""),
    ("kstream.tools.monitor", 9.1, ""),
    ("kstream.tools.perf", 9.2, ""),
    ("kstream.tools.web", 9.3, ""),
    ("kstream.tools.cli", 9.4, ""),
    ("kstream.__init__", 10, ""),  # the package face re-exports every layer
    ("pyspark_kstream", 10, ""),
)
LAYER_NAMES = {
    0: "ground", 1: "log.storage", 2: "log.cluster", 3: "log.transactions", 4: "log (face)",
    5: "groups", 6: "client", 7: "source/sink", 8: "data_source", 8.5: "mirror", 9: "tools", 9.1: "tools.monitor",
    9.2: "tools.perf", 9.3: "tools.web", 9.4: "tools.cli", 10: "kstream (face)",
}
OURS = ("kstream", "pyspark_kstream")


@dataclass(frozen=True)
class Import:
    """One reference from ``source`` (a module) to ``target`` (a kstream module)."""

    source: str
    target: str
    path: Path
    line: int
    text: str
    kind: str  # "top", "nested" (function-level), "typing" (TYPE_CHECKING), or "lazy" (a string naming a module)


@dataclass(frozen=True)
class Violation:
    path: Path
    line: int
    text: str
    rule: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}: {self.rule}"


def layer(module: str) -> tuple[float, str]:
    """``(rank, sibling group)`` of a dotted module name (``kstream`` itself is the face)."""
    name = "kstream.__init__" if module == "kstream" else module
    best = ("", 0.0, "")
    for prefix, rank, group in LAYERS:
        if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > len(best[0]):
            best = (prefix, rank, group)
    return best[1], best[2]


def room(module: str, packages: set[str]) -> str:
    """The package a module lives in (a package's ``__init__`` lives in the package). The
    leaves of ``kstream/`` itself are the ground floor's room, except ``data_source``, which
    is a room of its own; ``kstream/__init__`` is the package face."""
    if module in packages:
        return module
    package = module.rpartition(".")[0] or module
    if package == "kstream":
        return "kstream (ground)" if layer(module)[0] == 0 else module
    return package


def discover(roots: Iterable[Path]) -> dict[str, Path]:
    """Dotted name -> file, for every module of our packages under ``roots``."""
    modules: dict[str, Path] = {}
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[0] not in OURS:
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(tree: ast.Module) -> Iterator[tuple[ast.AST, str]]:
    """Every import statement, with its kind: "top" (at the module's top level), "typing"
    (under a module-level ``if TYPE_CHECKING:``, which never runs), or "nested"."""
    typing_only: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and _is_type_checking(node):
            typing_only.update(id(child) for child in ast.walk(node))
    top = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, "top" if id(node) in top else "typing" if id(node) in typing_only else "nested"


def _resolve(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
             modules: dict[str, Path]) -> list[str]:
    """The kstream modules an import statement loads (the deepest one per name)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] in OURS]
    base = node.module or ""
    if node.level:
        package = module if is_package else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    if base.split(".")[0] not in OURS:
        return []
    targets = []
    for alias in node.names:
        child = f"{base}.{alias.name}"
        targets.append(child if child in modules else base)
    return targets


def _lazy_references(tree: ast.Module, modules: dict[str, Path]) -> Iterator[tuple[int, str]]:
    """String constants naming a kstream module (the lazy-export maps of the faces)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in modules:
            if node.value.split(".")[0] in OURS and "." in node.value:
                yield node.lineno, node.value


def collect(modules: dict[str, Path], display_root: Path | None = None) -> list[Import]:
    """Every reference from one of ``modules`` to another kstream module."""
    found: list[Import] = []
    for module, path in modules.items():
        shown = path.relative_to(display_root) if display_root and path.is_relative_to(display_root) else path
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        source = path.read_text(encoding="utf-8")
        for node, kind in _statements(tree):
            assert isinstance(node, (ast.Import, ast.ImportFrom))
            text = " ".join((ast.get_source_segment(source, node) or "").split())
            for target in _resolve(node, module, is_package, modules):
                found.append(Import(module, target, shown, node.lineno, text, kind))
        for line, target in _lazy_references(tree, modules):
            found.append(Import(module, target, shown, line, repr(target), "lazy"))
    return found


def _direction(imp: Import) -> str | None:
    """The rule an import breaks by its direction alone, or None."""
    source_rank, source_group = layer(imp.source)
    target_rank, target_group = layer(imp.target)
    if target_rank > source_rank:
        return (f"upward import: {imp.source} ({LAYER_NAMES[source_rank]}) must not import "
                f"{imp.target} ({LAYER_NAMES[target_rank]}); hand it a callable instead")
    if target_rank == source_rank and source_group != target_group:
        return (f"sibling import: {imp.source} ({source_group}) and {imp.target} "
                f"({target_group}) must not see each other; move what both need below them")
    return None


def _cycles(edges: dict[str, dict[str, Import]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(components)


def _circle_violations(imports: list[Import], packages: set[str], label: str,
                       key: Callable[[str], str]) -> list[Violation]:
    edges: dict[str, dict[str, Import]] = {}
    for imp in imports:
        if imp.kind != "top":
            continue
        a, b = key(imp.source), key(imp.target)
        if a != b:
            edges.setdefault(a, {}).setdefault(b, imp)
    violations = []
    for component in _cycles(edges):
        members = set(component)
        names = " -> ".join(component)
        for a in component:
            for b, imp in sorted(edges.get(a, {}).items()):
                if b in members:
                    violations.append(Violation(imp.path, imp.line, imp.text,
                                                f"import circle between {label}: {names} ({a} -> {b})"))
    return violations


def check(roots: Iterable[Path], display_root: Path | None = None) -> list[Violation]:
    """All violations of the layer rule among the modules under ``roots``."""
    modules = discover(roots)
    packages = {name for name, path in modules.items() if path.name == "__init__.py"}
    imports = collect(modules, display_root)
    violations: list[Violation] = []
    for imp in imports:
        rule = _direction(imp)
        if rule:
            violations.append(Violation(imp.path, imp.line, imp.text, rule))
        if imp.kind == "nested":
            violations.append(Violation(
                imp.path, imp.line, imp.text,
                f"function-level import of a kstream module ({imp.target}): import it at the top, "
                f"or break the circle it dodges (move the shared piece down, or hand in a callable)"))
    violations += _circle_violations(imports, packages, "rooms", lambda m: room(m, packages))
    violations += _circle_violations(imports, packages, "modules", lambda m: m)
    unique = {(v.path, v.line, v.text, v.rule): v for v in violations}
    return sorted(unique.values(), key=lambda v: (str(v.path), v.line, v.rule))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="*", type=Path, default=[Path("src")],
                        help="source roots holding kstream/ (default: src)")
    args = parser.parse_args(argv)
    violations = check(args.roots, Path.cwd())
    for violation in violations:
        print(violation)
    if violations:
        print(f"{len(violations)} layer violation(s); the order is in scripts/check_layers.py "
              f"and docs/ARCHITECTURE.md", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
