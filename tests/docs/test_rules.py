"""docs/rules.md names every rule id the code cites: a reader who meets `O-BR9` in a docstring
finds what it says and which test covers it. An id cited in forge/ or web/src but missing from
the page fails here, naming where it is cited."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.pages import DOCS, ROOT

RULE_ID = re.compile(r"(?<![\w])(?<![A-Z]{2}-)(?!C[01]\b)(?:O-[A-Z]{0,2}|[A-Z]{1,2})\d{1,2}(?!\w)")
"""A rule id: one or two capitals and one or two digits (`A15`, `TM09`, `BR22`), or forge's own
`O-` ids (`O-3`, `O-G5`, `O-BR9`); either end of a range (`BR01-BR07`). Not part of a longer
word or number (`SIGUSR1`, `PKCS8`, `UP045`, `SHA-256`), not after a word and a dash (a queue
handle `FORGE-Q1`), and not `C0`/`C1`, which name the control-character sets."""
LISTED = re.compile(r"^\|\s*((?:O-[A-Z]*|[A-Z]+)\d+)\s*\|", re.MULTILINE)
"""An id as docs/rules.md lists it: the first cell of a table row."""


def cited_in_code() -> dict[str, str]:
    """Every rule id in forge/ and web/src, with the first place it is cited."""
    sources = [
        *sorted((ROOT / "forge").rglob("*.py")),
        *sorted((ROOT / "web" / "src").rglob("*.ts")),
        *sorted((ROOT / "web" / "src").rglob("*.tsx")),
    ]
    cited: dict[str, str] = {}
    for path in sources:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in RULE_ID.finditer(line):
                cited.setdefault(match.group(0), f"{path.relative_to(ROOT)}:{number}")
    return cited


def listed(page: Path) -> set[str]:
    return set(LISTED.findall(page.read_text(encoding="utf-8")))


def test_every_rule_id_cited_in_the_code_is_in_docs_rules() -> None:
    cited = cited_in_code()
    missing = sorted(
        f"{rule} (cited at {where})"
        for rule, where in cited.items()
        if rule not in listed(DOCS / "rules.md")
    )
    assert missing == []


def test_the_id_pattern_takes_rule_ids_and_nothing_else() -> None:
    text = (
        "(TM09, BR13) O-BR9, O-3 and O-G5; rows BR01-BR07; A15. "
        "SIGUSR1 PKCS8 UP045 SHA-256 P-256 UTF-8 FORGE-Q1 x86 C0, DEL, C1 controls; E2E"
    )
    assert RULE_ID.findall(text) == ["TM09", "BR13", "O-BR9", "O-3", "O-G5", "BR01", "BR07", "A15"]
