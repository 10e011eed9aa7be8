"""`aegis ctl` inside a worker pod: the pod's environment reaches only its own agent.

The job's own command plays `kubectl exec POD -- aegis ctl ...`: it runs in the pod's
environment (AEGIS_JOB, AEGIS_POD, the progress file's dir) with no ctl credential, asks its
own agent (a real one, under a real `aegis run`) for a check, and is refused stop, taint and
another pod's check. The job then ends normally: nothing stopped it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..support import AEGIS, AegisRun

SCRIPT = r"""
import json, subprocess, sys
out = sys.argv[1]
aegis = json.loads(sys.argv[2])
def ctl(*args):
    r = subprocess.run([*aegis, "ctl", *args], capture_output=True, text=True, timeout=120)
    return {"code": r.returncode, "stdout": r.stdout, "stderr": r.stderr}
res = {
    "check": ctl("--json", "check", "--check", "io", "--check", "runtime"),
    "check_human": ctl("check", "--check", "io"),
    "stop": ctl("stop"),
    "taint": ctl("taint", "node-1"),
    "other": ctl("check", "local-worker-1"),
    "status": ctl("status"),
}
open(out, "w").write(json.dumps(res))
"""


def test_ctl_in_a_pod_reaches_its_own_agent_and_cannot_stop_the_job(tmp_path: Path) -> None:
    out = tmp_path / "ctl-results.json"
    script = tmp_path / "inside.py"
    script.write_text(SCRIPT)
    cmd = [sys.executable, str(script), str(out), json.dumps(AEGIS)]
    run = AegisRun(tmp_path, 1, cmd=cmd)
    try:
        assert run.finish(150) == 0, run.output[-3000:]
    finally:
        run.stop()
    res = json.loads(out.read_text())
    check = res["check"]
    assert check["code"] == 0, check
    answer = json.loads(check["stdout"])
    assert answer["ok"] is True and list(answer["pods"]) == ["local-worker-0"]
    results = answer["pods"]["local-worker-0"]["result"]
    assert [r["check_type"] for r in results] == ["io", "runtime"]
    assert all(r["passed"] for r in results)
    assert res["check_human"]["code"] == 0 and "local-worker-0  io" in res["check_human"]["stdout"]
    for name in ("stop", "taint", "status"):
        r = res[name]
        assert r["code"] == 2, r
        assert "only hang, check and burn of this pod work" in r["stderr"], r
        assert "--kube" in r["stderr"]
    assert res["other"]["code"] == 2 and "only this pod can be addressed" in res["other"]["stderr"]
    # nothing stopped the job: it succeeded
    assert run.status()["phase"] == "Succeed" and not run.status()["shouldQuit"]
