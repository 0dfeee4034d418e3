"""A scripted learn atom: evidence JSON on stdin, one proposal JSON object on stdout.

argv: CTL_DIR. Each call appends its evidence to CTL_DIR/learn-calls.jsonl; CTL_DIR/learn-mode
(default `propose`) picks the answer: `propose` doubles the coding atom's timeout, `cosmetic`
only reorders keys and adds a comment, `fail` exits 3 with a coloured message, `garbage` prints
something that is not JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ctl = Path(sys.argv[1])
evidence = json.loads(sys.stdin.read())
with open(ctl / "learn-calls.jsonl", "a") as handle:
    handle.write(json.dumps(evidence) + "\n")
mode_file = ctl / "learn-mode"
mode = mode_file.read_text().strip() if mode_file.exists() else "propose"
document = yaml.safe_load(evidence["formula"]["yaml"])
if mode == "fail":
    print("boom \x1b[31mred\x1b[0m\u202e", file=sys.stderr)
    sys.exit(3)
if mode == "garbage":
    print("not json")
    sys.exit(0)
if mode == "cosmetic":
    text = "# tidied\n" + yaml.safe_dump(document, sort_keys=True)
else:
    document["atoms"][0]["timeoutMs"] *= 2
    text = yaml.safe_dump(document, sort_keys=False)
print(
    json.dumps(
        {
            "summary": "Give the coding atom twice the time.",
            "rationale": f"{len(evidence['attempts'])} attempts ended at the timeout.",
            "expectedImpact": "Fewer timeouts; longer runs.",
            "evaluation": "Count timeouts on the next comparable run.",
            "yaml": text,
        }
    )
)
