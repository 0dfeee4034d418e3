"""A coding harness that knows the answers (a stand-in for a model that solves replayed tasks).

argv: ANSWERS.json CTL_DIR [none]. ANSWERS maps an issue title to {path: content}; the harness
writes them into its workspace unless told `none`, and appends what it could see of git (every
commit reachable in its source) to CTL_DIR/probes.jsonl.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

task = json.loads(sys.stdin.read())
answers = json.loads(Path(sys.argv[1]).read_text())
ctl = Path(sys.argv[2])
if sys.argv[3:] != ["none"]:
    for rel, text in answers.get(task["title"], {}).items():
        (Path.cwd() / rel).write_text(text)
rev_list = subprocess.run(["git", "rev-list", "--all"], capture_output=True, text=True).stdout
with open(ctl / "probes.jsonl", "a") as handle:
    handle.write(json.dumps({"title": task["title"], "revList": rev_list.split()}) + "\n")
report = {
    "schemaVersion": "v1",
    "outcome": "completed",
    "usage": {"model": os.environ["FORGE_MODEL"]},
}
print(json.dumps(report))
