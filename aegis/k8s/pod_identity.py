"""Which pod incarnations may get a worker credential on Kubernetes: the API says.

An agent names its pod and its incarnation (the pod's uid, from the downward API). The
credential service accepts the request only when the API has a pod of that name in the job's
namespace, labelled with the job, whose uid is that incarnation: a bootstrap token alone does
not buy another pod's identity, nor a second credential for a pod that was replaced.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from aegis.k8s.api import KubeApi
from aegis.k8s.errors import K8sError
from aegis.k8s.resources import LABEL_JOB, POD

log = logging.getLogger(__name__)


def pod_expected(api: KubeApi, namespace: str, job: str) -> Callable[[str, str], bool]:
    """`expects(pod, incarnation)` for the credential service, checked against the API."""

    def expects(pod: str, incarnation: str) -> bool:
        try:
            obj = api.get(POD, namespace, pod)
        except K8sError as exc:
            log.warning("credential request for pod %s/%s: %s", namespace, pod, exc)
            return False
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        return meta.get("uid") == incarnation and labels.get(LABEL_JOB) == job

    return expects
