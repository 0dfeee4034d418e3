#!/bin/sh
# Hidden acceptance for count-words: runs in the candidate tree; exit 0 = accepted.
set -e
python3 - <<'PY'
from textstats import word_count
assert word_count("a  b") == 2, word_count("a  b")
assert word_count(" a\tb\n") == 2
assert word_count("") == 0
PY
