"""Generate the example's tiny repository: `textstats`, with two bugs and stdlib unittest tests.

Authors, dates and contents are fixed, so the base commit is the same on every machine and the
cohort can pin it: `python3 examples/lab/make_repo.py DIR` writes a git checkout at DIR.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BASE_COMMIT = "2551482e58db1b7ba13bbf3ba5e1ef04d6cccfe4"
"""Checked after generation; `plan.json` pins it as `baseCommit`."""

FILES = {
    "pyproject.toml": '[project]\nname = "textstats"\nversion = "0.1.0"\n',
    "README.md": "# textstats\n\nSmall text statistics.\n",
    "textstats/__init__.py": (
        "from textstats.count import mean_length, word_count\n\n"
        '__all__ = ["mean_length", "word_count"]\n'
    ),
    "textstats/count.py": (
        '"""Counting words."""\n\n\n'
        "def word_count(text: str) -> int:\n"
        '    """How many words `text` holds."""\n'
        '    return len(text.split(" "))\n\n\n'
        "def mean_length(text: str) -> float:\n"
        '    """The mean word length; 0.0 for a text without words."""\n'
        "    words = text.split()\n"
        "    return sum(len(w) for w in words) / len(words)\n"
    ),
    "tests/__init__.py": "",
    "tests/test_count.py": (
        "import unittest\n\nfrom textstats import mean_length, word_count\n\n\n"
        "class CountTest(unittest.TestCase):\n"
        "    def test_single_spaces(self) -> None:\n"
        '        self.assertEqual(word_count("a bc d"), 3)\n\n'
        "    def test_mean(self) -> None:\n"
        '        self.assertEqual(mean_length("ab cd"), 2.0)\n'
    ),
}

IDENTITY = {
    "GIT_AUTHOR_NAME": "forge example",
    "GIT_AUTHOR_EMAIL": "example@forge.invalid",
    "GIT_COMMITTER_NAME": "forge example",
    "GIT_COMMITTER_EMAIL": "example@forge.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **IDENTITY}
    done = subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return done.stdout.decode().strip()


def make(repo: Path) -> str:
    repo.mkdir(parents=True)
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "textstats: word_count and mean_length")
    git(repo, "remote", "add", "origin", "https://example.invalid/textstats.git")
    return git(repo, "rev-parse", "HEAD")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_repo.py DIR (a new directory)")
    commit = make(Path(sys.argv[1]))
    if commit != BASE_COMMIT:
        sys.exit(f"generated {commit}, expected {BASE_COMMIT}: the example's pins need updating")
    print(f"{sys.argv[1]}: base commit {commit}")
