"""The interface contract of a test-compile task: signatures of the names the PR adds.

When the hidden tests cannot even be collected at base because they import names the PR adds,
the task says which: every project name the hidden tests reference (`from m import x`, `m.x` after
`import m`, `C.x` on an imported class) that the base lacks and the merge commit declares, resolved
with `ast` over the merge tree's non-test files and rendered with bodies dropped. Pure: files are
read through the callables it is given.
"""

from __future__ import annotations

import ast
import copy
import posixpath
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from forge.lab.replay_files import fenced
from forge.lab.replay_pytest import MissingName
from forge.lab.replay_rules import is_test_file

MAX_CONTRACT_LINES = 400
HEADING = "## Interface contract (from the merged change)"
_FOLLOW_DEPTH = 3

Reader = Callable[[str], bytes | None]
"""A repository-relative path -> its bytes in one tree, None when absent."""


@dataclass(frozen=True)
class Ref:
    """A name the hidden tests use: `name` in `module` (`C.attr` for a class member)."""

    module: str
    name: str


@dataclass
class Contract:
    identifiers: list[str] = field(default_factory=list)
    """`module.name` of every identifier the PR adds that the tests need, sorted."""
    resolved: int = 0
    blocks: dict[str, list[str]] = field(default_factory=dict)
    """Module -> rendered lines (first line names the module and its file)."""

    def render(self) -> str:
        """The section appended to the task: one fenced python block per module."""
        parts = [HEADING, ""]
        for module in sorted(self.blocks):
            parts += [fenced("\n".join(self.blocks[module]), "python"), ""]
        return "\n".join(parts)

    def line_count(self) -> int:
        return len(self.render().splitlines())


def build_contract(
    hidden: dict[str, bytes],
    missing: Sequence[MissingName],
    *,
    base: Reader,
    merge: Reader,
) -> Contract:
    """Resolve what the hidden tests need and the base lacks; render it from the merge tree."""
    test_dirs = sorted({posixpath.dirname(path) for path in hidden})
    resolver = _Resolver(merge, base, test_dirs)
    refs: set[Ref] = set()
    for path, source in sorted(hidden.items()):
        refs |= _references(path, source)
    named: set[Ref] = set()
    for item in missing:
        named |= resolver.from_error(item, refs)
    contract = Contract()
    members: dict[tuple[str, str], list[str]] = {}
    for ref in sorted(refs | named, key=lambda r: (r.module, r.name)):
        outcome = resolver.added(ref)
        if outcome is None:
            continue
        file, rendered, class_name = outcome
        if rendered is None and ref not in named:
            continue  # a static reference nothing declares (dynamic or star export): no claim
        contract.identifiers.append(f"{ref.module}.{ref.name}")
        block = contract.blocks.setdefault(ref.module, [f"# module {ref.module} ({file})"])
        if rendered is None:
            block.append(f"{ref.name}  # declaration not found")
            continue
        contract.resolved += 1
        if class_name is None:
            block += rendered
        else:
            members.setdefault((ref.module, class_name), []).extend(rendered)
    for (module, class_name), lines in sorted(members.items()):
        header = resolver.class_header(module, class_name)
        contract.blocks[module] += [header, *lines]
    return contract


def _references(path: str, source: bytes) -> set[Ref]:
    """Names a test file takes from other modules, as (module, name)."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError:
        return set()
    package = posixpath.dirname(path).replace("/", ".")
    modules: dict[str, str] = {}
    """Local name bound by `import m [as x]` -> the module."""
    names: dict[str, str] = {}
    """Local name bound by `from m import n [as x]` -> the module it came from."""
    refs: set[Ref] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    modules[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    modules.setdefault(root, root)
                    modules[alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node.module or "", node.level, package)
            for alias in node.names:
                if alias.name == "*":
                    continue
                refs.add(Ref(module, alias.name))
                names[alias.asname or alias.name] = f"{module}\0{alias.name}"
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        dotted = _dotted(node)
        if dotted is None:
            continue
        head, _, rest = dotted.partition(".")
        if head in names:
            module, name = names[head].split("\0")
            refs.add(Ref(module, f"{name}.{rest.split('.')[0]}"))
            continue
        for length in range(dotted.count("."), 0, -1):
            prefix = ".".join(dotted.split(".")[:length])
            if prefix in modules:
                attr = dotted.split(".")[length]
                refs.add(Ref(modules[prefix], attr))
                break
    return refs


def _absolute(module: str, level: int, package: str) -> str:
    if level == 0:
        return module
    parts = package.split(".") if package else []
    base = parts[: len(parts) - (level - 1)] if level > 1 else parts
    return ".".join([*base, module] if module else base)


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


class _Resolver:
    """Finds modules and declarations in the merge tree (non-test files) and the base tree."""

    def __init__(self, merge: Reader, base: Reader, test_dirs: list[str]) -> None:
        self.merge = merge
        self.base = base
        self.roots = ["", "src", *test_dirs]
        self._trees: dict[tuple[str, str], ast.Module | None] = {}

    def module_file(self, module: str, reader: Reader) -> str | None:
        if not module:
            return None
        rel = module.replace(".", "/")
        for root in self.roots:
            for candidate in (f"{rel}.py", f"{rel}/__init__.py"):
                path = posixpath.join(root, candidate) if root else candidate
                if not is_test_file(path) and reader(path) is not None:
                    return path
        return None

    def tree(self, module: str, which: str) -> tuple[str, ast.Module] | None:
        reader = self.merge if which == "merge" else self.base
        path = self.module_file(module, reader)
        if path is None:
            return None
        key = (which, path)
        if key not in self._trees:
            try:
                self._trees[key] = ast.parse(reader(path) or b"", filename=path)
            except SyntaxError:
                self._trees[key] = None
        tree = self._trees[key]
        return None if tree is None else (path, tree)

    def from_error(self, item: MissingName, refs: Iterable[Ref]) -> set[Ref]:
        """The identifier a collection error names, as a reference."""
        if item.kind == "class-attribute":
            owners = {r.module for r in refs if r.name == item.module}
            return {Ref(m, f"{item.module}.{item.name}") for m in owners} or {
                Ref("?", f"{item.module}.{item.name}")
            }
        if item.name is None:
            return {r for r in refs if r.module == item.module}
        return {Ref(item.module, item.name)}

    def added(self, ref: Ref) -> tuple[str, list[str] | None, str | None] | None:
        """(file, rendered lines or None when not found, class name for a member) for a name
        the merge tree declares and the base lacks; None for names the base has or that are not
        the project's (a module outside the merge tree)."""
        merge_tree = self.tree(ref.module, "merge")
        if merge_tree is None:
            return ("?", None, None) if ref.module == "?" else None
        path = merge_tree[0]
        owner, _, member = ref.name.partition(".")
        if member and self.module_file(f"{ref.module}.{owner}", self.merge) is not None:
            return self.added(Ref(f"{ref.module}.{owner}", member))
        if self.module_file(f"{ref.module}.{ref.name}", self.merge) is not None:
            return None
        base_tree = self.tree(ref.module, "base")
        if member:
            node = self._find(ref.module, owner, "merge")
            if not isinstance(node, ast.ClassDef):
                return None
            base_class = self._find(ref.module, owner, "base") if base_tree else None
            if base_class is None:
                return None
            if isinstance(base_class, ast.ClassDef) and _member(base_class, member) is not None:
                return None
            found = _member(node, member)
            return (path, None if found is None else _indent(_signature(found)), owner)
        if base_tree is not None and self._find(ref.module, ref.name, "base") is not None:
            return None
        node = self._find(ref.module, ref.name, "merge")
        return (path, None if node is None else _signature(node), None)

    def _find(self, module: str, name: str, which: str, depth: int = 0) -> ast.stmt | None:
        """The top-level statement declaring `name`, following `from x import name` re-exports."""
        found = self.tree(module, which)
        if found is None:
            return None
        node = _binding(found[1], name)
        if isinstance(node, ast.ImportFrom) and depth < _FOLLOW_DEPTH:
            package = module if found[0].endswith("__init__.py") else module.rpartition(".")[0]
            source = _absolute(node.module or "", node.level, package)
            original = next(a.name for a in node.names if (a.asname or a.name) == name)
            return self._find(source, original, which, depth + 1) or node
        return node

    def class_header(self, module: str, name: str) -> str:
        node = self._find(module, name, "merge")
        if isinstance(node, ast.ClassDef):
            return _class_line(node)
        return f"class {name}:"


def _binding(tree: ast.Module, name: str) -> ast.stmt | None:
    found: ast.stmt | None = None
    for node in tree.body:
        if _binds(node, name):
            found = node
    return found


def _binds(node: ast.stmt, name: str) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and node.target.id == name
    if isinstance(node, ast.ImportFrom):
        return any((a.asname or a.name) == name for a in node.names)
    return False


def _member(node: ast.ClassDef, name: str) -> ast.stmt | None:
    return next((item for item in node.body if _binds(item, name)), None)


def _signature(node: ast.stmt) -> list[str]:
    """The declaration with bodies dropped (a class keeps its members' signatures)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        stub = copy.copy(node)
        stub.body = [ast.Expr(ast.Constant(...))]
        lines = ast.unparse(stub).splitlines()
        return [*lines[:-2], f"{lines[-2]} ..."] if len(lines) >= 2 else lines
    if isinstance(node, ast.ClassDef):
        lines = [f"@{ast.unparse(d)}" for d in node.decorator_list]
        lines.append(_class_line(node))
        body = [item for item in node.body if not _is_docstring(item)]
        members = [line for item in body for line in _indent(_signature(item))]
        return lines + (members or ["    ..."])
    if isinstance(node, ast.Assign):
        targets = " = ".join(ast.unparse(t) for t in node.targets)
        return [f"{targets} = {_value(node.value)}"]
    if isinstance(node, ast.AnnAssign):
        text = f"{ast.unparse(node.target)}: {ast.unparse(node.annotation)}"
        return [text if node.value is None else f"{text} = {_value(node.value)}"]
    if isinstance(node, ast.ImportFrom):
        return [ast.unparse(node)]
    return []


def _class_line(node: ast.ClassDef) -> str:
    bases = [ast.unparse(b) for b in node.bases] + [ast.unparse(k) for k in node.keywords]
    return f"class {node.name}({', '.join(bases)}):" if bases else f"class {node.name}:"


def _value(node: ast.expr) -> str:
    """A plain value is shown; a call, lambda or other computation becomes `...`."""
    return ast.unparse(node) if _plain(node) else "..."


def _plain(node: ast.expr) -> bool:
    if isinstance(node, (ast.Constant, ast.Name)):
        return True
    if isinstance(node, ast.Attribute):
        return _plain(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return isinstance(node.operand, ast.Constant)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_plain(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is None or _plain(k) for k in node.keys) and all(
            _plain(v) for v in node.values
        )
    return False


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _indent(lines: list[str]) -> list[str]:
    return [f"    {line}" for line in lines]
