"""A rank that leaves a `sleep infinity` child and a `setsid` daemon (holding its output
pipes) behind, writes their pids to $LEFT_PIDS and the time it exits, then exits $EXIT_CODE."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

left = [
    subprocess.Popen(["sleep", "infinity"]).pid,
    subprocess.Popen(["sleep", "100000"], start_new_session=True).pid,  # a setsid daemon
]
daemon = os.fork()
if daemon == 0:  # double fork: its parent gone at once, re-parented
    os.setsid()
    if os.fork() == 0:
        time.sleep(100000)
    os._exit(0)
os.waitpid(daemon, 0)
print("leaving", flush=True)
with open(os.environ["LEFT_PIDS"], "w") as f:
    json.dump({"pids": left, "exited": time.time()}, f)
sys.exit(int(os.environ.get("EXIT_CODE", "0")))
