"""An echo `gh` for transparency tests: reports argv and stdin, writes chosen stderr, exits rc.

stdout = JSON {argv, stdin_b64}; stderr = $ECHOGH_STDERR; rc = $ECHOGH_RC; sleeps $ECHOGH_SLEEP
seconds; touches $ECHOGH_READY first thing, so a test can act once it runs.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import sys
import time

if os.environ.get("ECHOGH_READY"):
    open(os.environ["ECHOGH_READY"], "w").close()
data = sys.stdin.buffer.read() if os.environ.get("ECHOGH_STDIN", "1") == "1" else b""
time.sleep(float(os.environ.get("ECHOGH_SLEEP", "0")))
sys.stdout.write(json.dumps({"argv": sys.argv[1:], "stdin_b64": base64.b64encode(data).decode()}))
sys.stdout.flush()
sys.stderr.buffer.write(os.environ.get("ECHOGH_STDERR", "").encode())
sys.stderr.flush()
if os.environ.get("ECHOGH_SIGNAL"):
    os.kill(os.getpid(), getattr(signal, os.environ["ECHOGH_SIGNAL"]))
sys.exit(int(os.environ.get("ECHOGH_RC", "0")))
