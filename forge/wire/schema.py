"""The web page's message types, generated from `forge.wire.registry`: `web/src/gen/protocol.ts`.

`python -m forge.wire.schema` writes the file; `python -m forge.wire.schema --check` exits 1 when
the committed file differs from what the registry generates (`.ci/run` runs it, as it checks the
bundle). The structs are walked with `msgspec.inspect`, so every field's TypeScript type is the
type msgspec encodes and decodes: a registered message becomes an interface named by its
direction and kind (`ServerTerminalView`, `ClientTerminalView`), every struct it holds an
interface by its class name, and the page gets the unions `ClientMessage` (what it may send) and
`ServerMessage` (what it receives).

Which fields may be left out follows the direction: a client may leave out a field that has a
default (the server fills it in); the server sends every field unless its struct omits defaults
(`omit_defaults`) or the field is `UNSET`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import msgspec
import msgspec.inspect as mi

from forge.errors import InternalError
from forge.wire import agent, git, terminal
from forge.wire.registry import REGISTRY, Direction, kind_of

OUTPUT = Path(__file__).resolve().parents[2] / "web" / "src" / "gen" / "protocol.ts"

HEADER = """\
// Generated from forge.wire.registry by `python -m forge.wire.schema`: do not edit.
// What the page sends (ClientMessage) and receives (ServerMessage) on the socket."""

PAYLOADS: tuple[type[msgspec.Struct], ...] = (
    git.Work,
    git.GitLayer,
    git.Diff,
    terminal.TerminalSummary,
    agent.Turn,
    agent.AgentHeader,
    agent.QueuedPrompt,
    agent.PermissionCard,
    agent.QuestionCard,
)
"""Structs the server carries inside snapshot and update bodies (typed as maps in the envelope),
written for the page as well, by their class names."""

_SCALARS: dict[type[mi.Type], str] = {
    mi.AnyType: "unknown",
    mi.RawType: "unknown",
    mi.NoneType: "null",
    mi.BoolType: "boolean",
    mi.IntType: "number",
    mi.FloatType: "number",
    mi.StrType: "string",
    mi.BytesType: "string",
    mi.DateTimeType: "string",
}


def _pascal(kind: str) -> str:
    return "".join(part.capitalize() for part in kind.split("_"))


def message_name(direction: Direction, shape: type[msgspec.Struct]) -> str:
    """A registered message's interface: its direction, then its kind (`ServerTerminalView`)."""
    return f"{_pascal(direction.value)}{_pascal(kind_of(shape))}"


def _optional(direction: Direction, cls: type[msgspec.Struct], field: mi.Field) -> bool:
    if field.required:
        return False
    if field.default is msgspec.NODEFAULT and field.default_factory is msgspec.NODEFAULT:
        return True  # its default is UNSET: left out of the JSON
    return direction is Direction.CLIENT or bool(cls.__struct_config__.omit_defaults)


def _doc(cls: type) -> str:
    """The first paragraph of a struct's docstring as a TSDoc comment, or nothing."""
    text = (cls.__doc__ or "").strip().split("\n\n")[0]
    if not text:
        return ""
    return "/** " + " ".join(line.strip() for line in text.splitlines()) + " */\n"


class _Writer:
    """Walks the registry's structs once per direction and writes their interfaces."""

    def __init__(self) -> None:
        self._names: dict[tuple[type, Direction], str] = {}
        self._taken: dict[str, tuple[type, Direction]] = {}
        self._blocks: list[str] = []

    def message(self, direction: Direction, shape: type[msgspec.Struct]) -> str:
        return self._struct(direction, shape, message_name(direction, shape))

    def _struct(self, direction: Direction, cls: type[msgspec.Struct], name: str) -> str:
        key = (cls, direction)
        if key in self._names:
            return self._names[key]
        info = mi.type_info(cls)
        assert isinstance(info, mi.StructType)
        other = (cls, Direction.SERVER if direction is Direction.CLIENT else Direction.CLIENT)
        if other in self._names and self._optionals(direction, info) == self._optionals(
            other[1], info
        ):
            self._names[key] = self._names[other]
            return self._names[other]
        if name in self._taken:
            name = f"{name}{_pascal(direction.value)}"
        if name in self._taken:
            taken = self._taken[name][0]
            raise InternalError(
                f"two structs generate the TypeScript name {name}: "
                f"{taken.__module__}.{taken.__qualname__} and {cls.__module__}.{cls.__qualname__}"
            )
        self._names[key] = name
        self._taken[name] = key
        lines = [f"{_doc(cls)}export interface {name} {{"]
        if info.tag_field is not None:
            lines.append(f"  {info.tag_field}: {_literal(info.tag)};")
        for field in info.fields:
            optional = _optional(direction, cls, field)
            t = field.type
            omitted_as_none = direction is Direction.SERVER and field.default is None
            if optional and omitted_as_none and isinstance(t, mi.UnionType):
                t = mi.UnionType(tuple(m for m in t.types if not isinstance(m, mi.NoneType)))
            mark = "?" if optional else ""
            lines.append(f"  {field.encode_name}{mark}: {self.type(direction, t)};")
        lines.append("}")
        self._blocks.append("\n".join(lines))
        return name

    def _optionals(self, direction: Direction, info: mi.StructType) -> frozenset[str]:
        return frozenset(f.name for f in info.fields if _optional(direction, info.cls, f))

    def type(self, direction: Direction, t: mi.Type) -> str:
        """`t` in TypeScript, its structs written once for `direction`."""
        scalar = _SCALARS.get(type(t))
        if scalar is not None:
            return scalar
        match t:
            case mi.Metadata():
                return self.type(direction, t.type)
            case mi.LiteralType():
                return " | ".join(_literal(value) for value in t.values)
            case mi.EnumType():
                return " | ".join(_literal(member.value) for member in t.cls)
            case mi.ListType() | mi.VarTupleType() | mi.SetType() | mi.FrozenSetType():
                return f"{_grouped(self.type(direction, t.item_type))}[]"
            case mi.TupleType():
                return "[" + ", ".join(self.type(direction, item) for item in t.item_types) + "]"
            case mi.DictType():
                return f"Record<string, {self.type(direction, t.value_type)}>"
            case mi.StructType():
                return self._struct(direction, t.cls, t.cls.__name__)
            case mi.UnionType():
                members = _unique(self.type(direction, member) for member in t.types)
                return "unknown" if "unknown" in members else " | ".join(members)
        raise InternalError(f"forge.wire.schema cannot write {t!r} in TypeScript")

    def text(self, unions: Iterable[tuple[str, str, list[str]]]) -> str:
        parts = [HEADER, *self._blocks]
        for doc, name, members in unions:
            parts.append(f"/** {doc} */\nexport type {name} =\n  | " + "\n  | ".join(members) + ";")
        return "\n\n".join(parts) + "\n"


def _literal(value: object) -> str:
    return msgspec.json.encode(value).decode()


def _grouped(text: str) -> str:
    return f"({text})" if " | " in text else text


def _unique(texts: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(texts))


def generate() -> str:
    """`web/src/gen/protocol.ts` as the registry has it now."""
    writer = _Writer()
    names: dict[Direction, list[str]] = {}
    for direction in (Direction.SERVER, Direction.CLIENT):
        names[direction] = [writer.message(direction, s) for s in REGISTRY.shapes(direction)]
    for payload in PAYLOADS:
        writer.type(Direction.SERVER, mi.type_info(payload))
    return writer.text(
        [
            ("Every message the page may send.", "ClientMessage", names[Direction.CLIENT]),
            ("Every message the page may receive.", "ServerMessage", names[Direction.SERVER]),
        ]
    )


def main(argv: list[str] | None = None, write: Callable[[str], object] = sys.stderr.write) -> int:
    parser = argparse.ArgumentParser(prog="python -m forge.wire.schema", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file has drifted")
    args = parser.parse_args(argv)
    text = generate()
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else None
        if current != text:
            write(f"{OUTPUT} differs from forge.wire.registry: run python -m forge.wire.schema\n")
            return 1
        return 0
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
