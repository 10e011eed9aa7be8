"""An agent proves its pod with the pod's own service-account token, checked by TokenReview.

Each worker pod gets a projected service-account token (audience `aegis`, bound to the pod:
Kubernetes ties it to the pod's name and uid and invalidates it when the pod is deleted) at
AGENT_TOKEN_FILE (resources.py), named to the agent in `AEGIS_TOKEN_FILE`. The agent presents
it once, with its pod name and incarnation (the pod's uid); the credential service asks the
API server (TokenReview) whether the token is valid for the `aegis` audience and whose it
is, and accepts only a service account of the job's namespace whose token names that very
pod and uid. Vault's and SPIRE's Kubernetes attestors work the same way. No shared secret: a
pod's token proves that pod only, and nothing once the pod is gone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from aegis.k8s.api import KubeApi
from aegis.k8s.errors import K8sError
from aegis.k8s.resources import AGENT_TOKEN_AUDIENCE as AUDIENCE
from aegis.k8s.resources import Resource

log = logging.getLogger(__name__)

TOKEN_REVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview")
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"


def review(token: str, audience: str = AUDIENCE) -> dict[str, object]:
    """The TokenReview the credential service creates for `token`."""
    return {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token, "audiences": [audience]},
    }


def token_proves(
    api: KubeApi, namespace: str, audience: str = AUDIENCE
) -> Callable[[str, str, str], bool]:
    """`proves(pod, incarnation, token)` for the credential service: the API server says the
    token is valid for `audience` and belongs to a service account of `namespace`, bound to
    the pod `pod` whose uid is `incarnation`."""

    def proves(pod: str, incarnation: str, token: str) -> bool:
        if not token:
            return False
        try:
            answer = api.create(TOKEN_REVIEWS, None, review(token, audience))
        except K8sError as exc:
            log.warning("TokenReview for pod %s/%s failed: %s", namespace, pod, exc)
            return False
        status = answer.get("status") or {}
        user = status.get("user") or {}
        extra = user.get("extra") or {}
        return (
            status.get("authenticated") is True
            and audience in (status.get("audiences") or ())
            and str(user.get("username", "")).startswith(f"system:serviceaccount:{namespace}:")
            and extra.get(POD_NAME_KEY) == [pod]
            and extra.get(POD_UID_KEY) == [incarnation]
        )

    return proves
