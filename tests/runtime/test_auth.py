"""Names, subjects, JWT claims and the generated stubs (no server needed)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aegis.protocol.errors import InvalidNameError
from aegis.protocol.subjects import (
    JobSubjects,
    validate_incarnation,
    validate_label,
    validate_pod_name,
)
from aegis.runtime.transport.auth import Operator, is_user_public_key, new_user_keypair


def claims(jwt: str) -> dict[str, Any]:
    body = jwt.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))))


def test_subjects_are_spelled_in_one_place() -> None:
    s = JobSubjects("team", "train-a")
    assert (s.master, s.join("p-0", "i7"), s.report("p-0", "i7"), s.heartbeat("p-0", "i7")) == (
        "aegis.team.train-a.master",
        "aegis.team.train-a.join.p-0.i7",
        "aegis.team.train-a.report.p-0.i7",
        "aegis.team.train-a.heartbeat.p-0.i7",
    )
    assert s.wildcard == "aegis.team.train-a.>"
    assert (s.joins, s.reports, s.heartbeats) == (
        "aegis.team.train-a.join.>",
        "aegis.team.train-a.report.>",
        "aegis.team.train-a.heartbeat.>",
    )


@pytest.mark.parametrize("pod", ["p-0", "train-a-worker-0.node-1", "a.b.c"])
@pytest.mark.parametrize("inc", ["i1", "0f3a9c21d4e5b6a7", "5b1d3f8e-2c4a-4e6b-9d0f-1a2b3c4d5e6f"])
def test_the_sender_is_read_back_from_its_own_subjects_only(pod: str, inc: str) -> None:
    s = JobSubjects("team", "train-a")
    assert [s.pod_subject(f(pod, inc)) for f in (s.join, s.report, s.heartbeat)] == [
        ("join", pod, inc),
        ("report", pod, inc),
        ("heartbeat", pod, inc),
    ]
    other = JobSubjects("team", "train-b")
    for subject in (
        s.master,
        s.ctl_agent(pod),
        other.report(pod, inc),
        other.join(pod, inc),
        s.reports,
        s.report_prefix + pod.replace(".", "-"),  # no incarnation: not a sender's subject
    ):
        assert s.pod_subject(subject) is None, subject
    assert s.pod_subject(s.report_prefix) is None


@given(
    pods=st.lists(
        st.from_regex(r"[a-z0-9]([a-z0-9.-]{0,20}[a-z0-9])?", fullmatch=True), min_size=2
    ),
    incs=st.lists(st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True), min_size=2),
)
def test_one_subject_names_one_pod_incarnation(pods: list[str], incs: list[str]) -> None:
    """A credential's subjects never cover another pod's or another incarnation's (the
    incarnation has no dot, so a pod name with dots cannot end as another's incarnation)."""
    s = JobSubjects("team", "train-a")
    senders = {(p, i) for p in pods for i in incs if ".." not in p}
    subjects = {s.report(p, i): (p, i) for p, i in senders}
    assert len(subjects) == len(senders)
    for subject, sender in subjects.items():
        assert tuple(s.pod_subject(subject) or ())[1:] == sender


@pytest.mark.parametrize("bad", ["", "a.b", "a*", ">", "A", "x" * 64])
def test_an_incarnation_is_one_subject_token(bad: str) -> None:
    with pytest.raises(InvalidNameError, match="incarnation"):
        validate_incarnation(bad)
    with pytest.raises(InvalidNameError):
        JobSubjects("team", "train-a").report("p-0", bad)


def test_inboxes_are_one_per_pod_and_never_a_pods_for_ctl() -> None:
    s = JobSubjects("team", "train-a")
    pods = ["a", "a.b", "a-b", "ctl", "b.ctl", "a.b.c", "a-b.c"]
    inboxes = [s.inbox_prefix(p) for p in pods]
    assert len(set(inboxes)) == len(pods)  # injective, '.' mapped to '_'
    assert all("." not in i for i in inboxes)  # one subject token each
    assert s.ctl_inbox_prefix not in inboxes
    assert JobSubjects("team", "train-b").inbox_prefix("a") not in inboxes


@pytest.mark.parametrize(
    "bad", ["", "a.b", "a*", ">", "A", "-a", "a-", "a b", "x" * 64, "ä", None, 3]
)
def test_bad_labels_are_refused_with_a_reason(bad: object) -> None:
    with pytest.raises(InvalidNameError, match="job"):
        validate_label("job", bad)
    with pytest.raises(InvalidNameError):
        JobSubjects("team", bad)  # type: ignore[arg-type]


def test_pod_names_are_dns_subdomains() -> None:
    assert validate_pod_name("train-a-worker-0.node-1") == "train-a-worker-0.node-1"
    for bad in ("", "Pod", "a..>", "a*", "x" * 254):
        with pytest.raises(InvalidNameError):
            validate_pod_name(bad)


def test_public_user_key_check() -> None:
    kp = new_user_keypair()
    assert is_user_public_key(kp.public_key.decode())
    assert not is_user_public_key(kp.seed.decode())  # a seed is never accepted
    assert not is_user_public_key(Operator().system_account.public_key)  # an account key
    assert not is_user_public_key("U" + "A" * 55)  # bad checksum
    assert not is_user_public_key(None)


def test_jwt_chain_and_permissions() -> None:
    op = Operator()
    job = op.create_job_account("team", "train-a")
    assert claims(op.jwt)["nats"]["system_account"] == op.system_account.public_key
    assert claims(job.account.jwt)["iss"] == op.public_key
    key = new_user_keypair().public_key.decode()
    worker = claims(job.worker_jwt(key, "train-a-worker-0", "i7", expires=2_000_000_000))
    assert worker["exp"] == 2_000_000_000  # nats-server closes its connections then
    assert (worker["sub"], worker["iss"], worker["name"]) == (
        key,
        job.account.public_key,
        "train-a-worker-0",
    )
    # a worker publishes only its own incarnation's joins, reports and heartbeats (never
    # orders or ctl requests), reads orders, ctl requests to its pod and its own inbox, and
    # may answer what it received
    assert worker["nats"]["pub"] == {
        "allow": [
            "aegis.team.train-a.join.train-a-worker-0.i7",
            "aegis.team.train-a.report.train-a-worker-0.i7",
            "aegis.team.train-a.heartbeat.train-a-worker-0.i7",
        ]
    }
    assert worker["nats"]["sub"] == {
        "allow": [
            "aegis.team.train-a.master",
            "aegis.team.train-a.ctl.agent.train-a-worker-0",
            "_INBOX_team_train-a_train-a-worker-0.>",
        ]
    }
    assert worker["nats"]["resp"] == {"max": 1, "ttl": 0}  # the key nats-server reads
    ctl = claims(job.ctl_credentials().user_jwt)["nats"]
    assert ctl["pub"] == {"allow": ["aegis.team.train-a.ctl.>"]}
    assert ctl["sub"] == {"allow": ["_INBOX_team_train-a__ctl.>"]}
    master = claims(job.controller_credentials().user_jwt)
    assert master["iss"] == job.account.public_key
    assert not master["nats"].get("pub") and not master["nats"].get("sub")
    with pytest.raises(ValueError, match="public user NKey"):
        job.worker_jwt("SUAEXAMPLE", "p", "i7")
    assert "exp" not in claims(job.worker_jwt(key, "p", "i7"))  # 0: no expiry


def test_bootstrap_tokens_are_random_and_compared_exactly() -> None:
    op = Operator()
    a, b = op.create_job_account("team", "a"), op.create_job_account("team", "b")
    assert a.bootstrap_token != b.bootstrap_token and len(a.bootstrap_token) >= 40
    assert a.token_matches(a.bootstrap_token)
    assert not a.token_matches(a.bootstrap_token[:-1]) and not a.token_matches("")
    assert a.bootstrap_token not in repr(a)


def test_credentials_repr_hides_the_seed() -> None:
    creds = Operator().create_job_account("team", "a").controller_credentials()
    assert creds.seed.decode() not in repr(creds)
    assert creds.seed.decode() in creds.creds_text()


def test_generated_stubs_are_current_and_marked(tmp_path: Path) -> None:
    from aegis.runtime.transport.proto.__main__ import HERE, generate

    for fresh in generate(tmp_path):
        committed = HERE / fresh.name
        text = committed.read_text()
        assert text.startswith("# generated by grpc_tools.protoc from credentials.proto")
        assert text == fresh.read_text(), (
            f"{committed.name} is stale: python -m aegis.runtime.transport.proto"
        )


def test_nats_and_grpc_are_imported_only_in_the_transport_package() -> None:
    root = Path(__file__).resolve().parents[2] / "aegis"
    pattern = re.compile(r"^\s*(import|from)\s+(nats|grpc|grpc_tools)\b", re.MULTILINE)
    offenders = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if "runtime/transport" not in p.as_posix() and pattern.search(p.read_text())
    ]
    assert offenders == []
