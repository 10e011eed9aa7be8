"""Which pod incarnations may get a worker credential on Kubernetes: the API says.

An agent names its pod and its incarnation (the pod's uid, from the downward API). The
credential service accepts the request only when the API has a pod of that name in the job's
namespace, labelled with the job, whose uid is that incarnation: a bootstrap token alone does
not buy another pod's identity, nor a second credential for a pod that was replaced.

With a pod cache (the credential service's list and watch of the worker pods), a pod the watch
shows alive with that uid and label is accepted without a call: a 12,500-pod job's agents
asking at once were 12,500 GETs of the API server. Anything else (a pod the watch has not
shown yet, another uid, a pod being deleted or ended, no cache) is asked of the API as before:
the cache only ever says yes to what the API said yes to, as recently as the watch's delay.
Kubernetes' own Node authorizer decides from a watch-fed graph in the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from aegis.k8s.api import KubeApi
from aegis.k8s.errors import K8sError
from aegis.k8s.pod_cache import PodCache
from aegis.k8s.resources import LABEL_JOB, POD

log = logging.getLogger(__name__)
ENDED = ("Succeeded", "Failed")  # pod phases: such a pod runs no agent that could ask


def pod_expected(
    api: KubeApi, namespace: str, job: str, pods: PodCache | None = None
) -> Callable[[str, str], bool]:
    """`expects(pod, incarnation)` for the credential service: from `pods` when it shows that
    pod alive with that uid and the job's label, else checked against the API."""

    def expects(pod: str, incarnation: str) -> bool:
        held = pods.get(namespace, pod) if pods is not None else None
        if (
            held is not None
            and held.uid == incarnation
            and held.job == job
            and not held.view.deleting
            and held.view.phase not in ENDED
        ):
            return True
        try:
            obj = api.get(POD, namespace, pod)
        except K8sError as exc:
            log.warning("credential request for pod %s/%s: %s", namespace, pod, exc)
            return False
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        return meta.get("uid") == incarnation and labels.get(LABEL_JOB) == job

    return expects
