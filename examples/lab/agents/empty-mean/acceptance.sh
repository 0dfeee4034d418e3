#!/bin/sh
# Hidden acceptance for empty-mean: runs in the candidate tree; exit 0 = accepted.
set -e
python3 - <<'PY'
from textstats import mean_length
assert mean_length("") == 0.0
assert mean_length("   ") == 0.0
assert mean_length("ab cdef") == 3.0
PY
