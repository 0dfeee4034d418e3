"""Hostile client frames as Hypothesis strategies, derived from forge/wire's own definitions.

Text frames start from every `ClientMessage` struct forge.wire defines, each field's type read
through `msgspec.inspect`: a valid message made wrong in exactly one place (a required field
dropped, or one field given a JSON value its type refuses, down to a seat's field or a list's
item), the same behind a bulky unknown field (a long string, or arrays nested `DEEPEST` deep),
a valid message cut short or wrapped so it is no object; and, from no struct in particular, an
unknown, non-string or missing `kind`, a JSON value that is no object, text that is no JSON.
Binary frames come from forge.wire.binary's kinds and headers: empty, a client kind's header cut
short, an empty, odd or oversized dictation payload, a kind only the server sends (whole or cut),
a kind byte nobody defines. Every frame must be refused, a text one by forge's own
`ClientDecoder` and a binary one by `decode_client_binary` (tests/bench/test_hostile.py): a
generated frame forge takes is a bug here, not in forge.

`frames(seed)` is what one hostile client sends: a round of text frames with every struct in it
once, then the rest, and a round of binary frames with every form once, shuffled. It is one
Hypothesis example drawn under `@seed` (`draw`), so a chaos run's `--seed` replays it. One
example rather than one per frame: Hypothesis's generate phase follows each random example with
near copies, and 600 examples in one run still missed whole structs. The strategies are pure;
run as a script (`main`), the module prints one client's frames for a seed.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec
import msgspec.inspect as mi
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as seeded
from hypothesis import strategies as st

import forge.wire
from forge.wire import binary
from forge.wire.client import ClientMessage

T = TypeVar("T")

TEXT_FRAMES = 60
"""Text frames per hostile client: every struct once (39 today), the rest without one."""
DEEPEST = 3000
"""How deep a "nested deep" message's arrays go: past the ~990 levels where msgspec's recursion
ends, which forge's `ClientDecoder` must refuse like any other wrong message."""
NEAR_LIMIT = sys.getrecursionlimit()
"""Depths just under this are drawn as often as the rest: the decoder reads a wrong message twice,
the second time one call deeper, and a depth that only the first read follows once closed the
connection instead of being refused."""
PADDING_MAX = 256 * 1024
"""The longest unknown string a "padded" message carries (the 16 MiB bound has its own fault)."""
PADDING, NESTING = "_padding", "_nesting"
"""The unknown fields that carry them (no client struct names a field with a leading `_`)."""
TAG_FIELD = str(ClientMessage.__struct_config__.tag_field)

JSON_KINDS = ("null", "bool", "int", "float", "str", "array", "object")
"""The kinds of JSON value; a field's type takes some of them (`takes` says which)."""

_scalars: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
OF_KIND: dict[str, st.SearchStrategy[Any]] = {
    "null": st.none(),
    "bool": st.booleans(),
    "int": st.integers(),
    "float": st.floats(allow_nan=False, allow_infinity=False),
    "str": st.text(max_size=12),
    "array": st.lists(JSON_VALUES, max_size=3),
    "object": st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=3),
}


@dataclass(frozen=True, slots=True)
class Hostile:
    """One text frame, the struct it was built from (None: none) and how it is wrong."""

    text: str
    kind: str | None
    flaw: str


Frames = tuple[list[Hostile], list[bytes]]
"""One hostile client's text frames and binary frames."""


def tag_of(shape: type[ClientMessage]) -> str:
    return str(shape.__struct_config__.tag)


def message_types() -> tuple[type[ClientMessage], ...]:
    """Every `ClientMessage` struct forge.wire defines, by tag: the client verbs and the ones an
    area adds (`lab_start`); not the supervisor's drills, which a production run never decodes."""
    for module in pkgutil.iter_modules(forge.wire.__path__):
        importlib.import_module(f"forge.wire.{module.name}")
    found: dict[str, type[ClientMessage]] = {}
    stack = [ClientMessage]
    while stack:
        for shape in stack.pop().__subclasses__():
            stack.append(shape)
            if shape.__module__.startswith("forge.wire."):
                found[tag_of(shape)] = shape
    return tuple(found[tag] for tag in sorted(found))


def struct_info(shape: type[ClientMessage]) -> mi.StructType:
    info = mi.type_info(shape)
    assert isinstance(info, mi.StructType)
    return info


# --- what a type takes ------------------------------------------------------------------------


def takes(kind: mi.Type) -> frozenset[str]:
    """The JSON kinds a value of this type may be; a type this does not know takes them all, so
    no value is ever called wrong for it."""
    match kind:
        case mi.UnionType(types=members):
            return frozenset().union(*(takes(member) for member in members))
        case mi.NoneType():
            return frozenset({"null"})
        case mi.BoolType():
            return frozenset({"bool"})
        case mi.IntType():
            return frozenset({"int"})
        case mi.FloatType():
            return frozenset({"int", "float"})
        case mi.StrType():
            return frozenset({"str"})
        case mi.LiteralType(values=values) if all(isinstance(v, str) for v in values):
            return frozenset({"str"})
        case mi.ListType() | mi.SetType() | mi.FrozenSetType() | mi.VarTupleType() | mi.TupleType():
            return frozenset({"array"})
        case mi.DictType() | mi.StructType() | mi.TypedDictType() | mi.DataclassType():
            return frozenset({"object"})
    return frozenset(JSON_KINDS)


def valid(kind: mi.Type) -> st.SearchStrategy[Any]:
    """JSON values this type takes (constraints are not read: no client struct has one, and
    test_hostile.py decodes these to prove the values right)."""
    match kind:
        case mi.UnionType(types=members):
            return st.one_of([valid(member) for member in members])
        case mi.NoneType():
            return st.none()
        case mi.BoolType():
            return st.booleans()
        case mi.IntType():
            return st.integers(-(2**63), 2**63 - 1)
        case mi.FloatType():
            return OF_KIND["float"]
        case mi.StrType():
            return OF_KIND["str"]
        case mi.LiteralType(values=values):
            return st.sampled_from(values)
        case mi.ListType(item_type=item):
            return st.lists(valid(item), max_size=3)
        case mi.DictType(key_type=mi.StrType(), value_type=value):
            return st.dictionaries(OF_KIND["str"], valid(value), max_size=3)
        case mi.StructType():
            return valid_object(kind)
    return JSON_VALUES


def valid_object(struct: mi.StructType) -> st.SearchStrategy[dict[str, Any]]:
    """A struct as a JSON object: its tag, every required field, some of the others."""
    tag = {struct.tag_field: st.just(struct.tag)} if struct.tag_field else {}
    required = {f.encode_name: valid(f.type) for f in struct.fields if f.required}
    optional = {f.encode_name: valid(f.type) for f in struct.fields if not f.required}
    return st.fixed_dictionaries({**tag, **required}, optional=optional)


# --- what a type refuses ----------------------------------------------------------------------


def wrong(kind: mi.Type) -> st.SearchStrategy[Any] | None:
    """JSON values this type refuses, or None when it takes every value (`Any`): a value of a
    kind it never takes, or one of the right kind wrong inside when no other member of its union
    takes that kind."""
    options = [OF_KIND[k] for k in JSON_KINDS if k not in takes(kind)]
    members = kind.types if isinstance(kind, mi.UnionType) else (kind,)
    for member in members:
        others = frozenset().union(*(takes(m) for m in members if m is not member))
        if not takes(member) & others:
            options.extend(_wrong_inside(member))
    return st.one_of(options) if options else None


def _wrong_inside(kind: mi.Type) -> list[st.SearchStrategy[Any]]:
    match kind:
        case mi.LiteralType(values=values) if all(isinstance(v, str) for v in values):
            return [OF_KIND["str"].filter(lambda text: text not in values)]
        case mi.ListType(item_type=item) if (bad := wrong(item)) is not None:
            around = st.lists(valid(item), max_size=2)
            return [st.tuples(around, bad, around).map(lambda p: [*p[0], p[1], *p[2]])]
        case mi.DictType(key_type=mi.StrType(), value_type=value) if (
            bad := wrong(value)
        ) is not None:
            others = st.dictionaries(OF_KIND["str"], valid(value), max_size=2)
            return [st.tuples(others, OF_KIND["str"], bad).map(lambda p: {**p[0], p[1]: p[2]})]
        case mi.StructType():
            return [flawed for _, flawed in flaws(kind)]
    return []


def flaws(struct: mi.StructType) -> list[tuple[str, st.SearchStrategy[dict[str, Any]]]]:
    """Each way to make this struct's object wrong in one place, named: a required field
    dropped, or one field (required or not) given a value its type refuses."""
    out: list[tuple[str, st.SearchStrategy[dict[str, Any]]]] = []
    for field in struct.fields:
        name = field.encode_name
        if field.required:
            out.append(("missing field", valid_object(struct).map(_without(name))))
        bad = wrong(field.type)
        if bad is not None:
            pair = st.tuples(valid_object(struct), bad)
            out.append(("wrong type", pair.map(_put(name))))
    return out


def _without(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda message: {k: v for k, v in message.items() if k != name}


def _put(name: str) -> Callable[[tuple[dict[str, Any], Any]], dict[str, Any]]:
    return lambda pair: {**pair[0], name: pair[1]}


# --- text frames ------------------------------------------------------------------------------


def _encode(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _is_json(text: str) -> bool:
    try:
        msgspec.json.decode(text)
    except msgspec.DecodeError:
        return False
    return True


def _nested(depth: int) -> msgspec.Raw:
    """Arrays `depth` deep as JSON text (a Python list that deep would exhaust the encoder)."""
    return msgspec.Raw(b"[" * depth + b"]" * depth)


def depths() -> st.SearchStrategy[int]:
    """How deep a "nested deep" message goes: anywhere up to `DEEPEST`, or just under the limit."""
    return st.integers(1, DEEPEST) | st.integers(NEAR_LIMIT - 100, NEAR_LIMIT)


def about_a_struct(info: mi.StructType) -> st.SearchStrategy[Hostile]:
    """Frames built from one struct: half wrong in one place (`flaws`), half the same behind a
    long unknown string or deeply nested arrays, or a valid message cut short or wrapped so it
    is no object (a struct without fields has only those last two)."""
    tag = str(info.tag)
    text = valid_object(info).map(_encode)
    cut = text.flatmap(
        lambda t: st.integers(0, len(t) - 1).map(lambda n: Hostile(t[:n], tag, "cut short"))
    )
    wrapped = valid_object(info).flatmap(
        lambda m: st.sampled_from([[m], _encode(m)]).map(
            lambda w: Hostile(_encode(w), tag, "not an object")
        )
    )
    found = flaws(info)
    if not found:
        return st.one_of(cut, wrapped)
    flawed = st.one_of([st.tuples(st.just(flaw), m) for flaw, m in found])

    def bulky(how: str, key: str, extra: st.SearchStrategy[Any]) -> st.SearchStrategy[Hostile]:
        """Wrong in one place, behind an unknown field the decoder reads past first."""
        pair = st.tuples(flawed, extra)
        return pair.map(lambda p: Hostile(_encode({key: p[1], **p[0][1]}), tag, how))

    in_one_place = flawed.map(lambda p: Hostile(_encode(p[1]), tag, p[0]))
    other_ways = st.one_of(
        bulky("padded", PADDING, st.integers(1, PADDING_MAX).map(lambda n: "x" * n)),
        bulky("nested deep", NESTING, depths().map(_nested)),
        cut,
        wrapped,
    )
    # st.one_of would flatten other_ways into its own branches and pick each about as often.
    return st.booleans().flatmap(lambda half: in_one_place if half else other_ways)


def without_a_struct(infos: list[mi.StructType]) -> st.SearchStrategy[Hostile]:
    """Frames wrong before any struct is chosen: an unknown, non-string or missing `kind` (on
    some struct's fields), a JSON value that is no object, text that is no JSON."""
    tags = frozenset(str(info.tag) for info in infos)
    fields = st.sampled_from(infos).flatmap(valid_object)

    def renamed(kinds: st.SearchStrategy[Any], flaw: str) -> st.SearchStrategy[Hostile]:
        pair = st.tuples(fields, kinds)
        return pair.map(lambda p: Hostile(_encode({**p[0], TAG_FIELD: p[1]}), None, flaw))

    return st.one_of(
        renamed(st.text(max_size=24).filter(lambda kind: kind not in tags), "unknown kind"),
        renamed(st.one_of([OF_KIND[k] for k in JSON_KINDS if k != "str"]), "kind not a string"),
        fields.map(_without(TAG_FIELD)).map(lambda m: Hostile(_encode(m), None, "no kind")),
        JSON_VALUES.filter(lambda v: not isinstance(v, dict)).map(
            lambda v: Hostile(_encode(v), None, "not an object")
        ),
        st.text(max_size=40)
        .filter(lambda t: not _is_json(t))
        .map(lambda t: Hostile(t, None, "not JSON")),
    )


def text_round(count: int = TEXT_FRAMES) -> st.SearchStrategy[list[Hostile]]:
    """`count` text frames in a random order: one built from each struct, the rest from none."""
    infos = [struct_info(shape) for shape in message_types()]
    for info in infos:
        assert not {PADDING, NESTING} & {f.encode_name for f in info.fields}
    rest = max(count - len(infos), 0)
    frames = st.tuples(
        *(about_a_struct(info) for info in infos), *([without_a_struct(infos)] * rest)
    )
    return frames.flatmap(st.permutations)


# --- binary frames ----------------------------------------------------------------------------


def binary_forms() -> list[st.SearchStrategy[bytes]]:
    """Each form of binary frame `decode_client_binary` drops, from forge.wire.binary's kinds and
    headers (a kind's header is `<KIND>_HEADER`)."""
    forms: list[st.SearchStrategy[bytes]] = [st.just(b"")]
    for kind in binary.Kind:
        header = getattr(binary, f"{kind.name}_HEADER", None)
        if kind in binary.SERVER_KINDS:
            size = header.size if header is not None else 1
            whole_or_cut = st.binary(max_size=size + 16)
            forms.append(st.tuples(st.just(bytes([kind])), whole_or_cut).map(b"".join))
        elif header is not None:
            cut = st.binary(max_size=header.size - 2)
            forms.append(st.tuples(st.just(bytes([kind])), cut).map(b"".join))
    most = binary.DICTATION_MAX_BYTES
    dictation = bytes([binary.Kind.DICTATION])
    unknown = st.integers(0, 255).filter(lambda byte: byte not in set(binary.Kind))
    forms += [
        st.just(dictation),
        st.integers(0, most // 2 - 1).map(lambda n: dictation + bytes(2 * n + 1)),
        st.integers(most + 1, most + 4096).map(lambda n: dictation + bytes(n)),
        st.tuples(unknown, st.binary(max_size=32)).map(lambda p: bytes([p[0]]) + p[1]),
    ]
    return forms


def binary_round() -> st.SearchStrategy[list[bytes]]:
    """One binary frame of each form, in a random order."""
    return st.tuples(*binary_forms()).flatmap(st.permutations)


# --- drawing ----------------------------------------------------------------------------------


def draw(strategy: st.SearchStrategy[T], seed: int) -> T:
    """One example of `strategy`, the same for the same `seed` (Hypothesis's `@seed`, with no
    database, no deadline, no health check timing a draw, only the generate phase). Hypothesis
    runs its simplest example first, the same for every seed: the second one is the seed's."""
    drawn: list[T] = []

    @seeded(seed)
    @settings(
        database=None,
        max_examples=2,
        derandomize=False,
        phases=(Phase.generate,),
        deadline=None,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        print_blob=False,
    )
    @given(strategy)
    def collect(example: T) -> None:
        drawn.append(example)

    collect()
    return drawn[-1]


def frames(seed: int) -> Frames:
    """What one hostile client sends for `seed`: its text frames, then its binary ones."""
    return draw(_rounds(), seed)


@functools.cache
def _rounds() -> st.SearchStrategy[Frames]:
    """Built once: Hypothesis then checks and caches the strategies once (half the cost)."""
    return st.tuples(text_round(), binary_round())


def main() -> None:
    """`python -P bench/hostile.py SEED`: `frames(SEED)` as JSON on stdout (binary in base64).

    The chaos run draws its frames this way, in a fresh interpreter: Hypothesis also draws
    constants it finds in the local modules loaded, so in a process that had imported more the
    same seed would give other frames (and the draw would hold the GIL the bench's clients
    measure with)."""
    sys.stdout.buffer.write(msgspec.json.encode(frames(int(sys.argv[1]))))


if __name__ == "__main__":
    main()
