"""Errors raised by the Kubernetes integration."""

from __future__ import annotations

from aegis.errors import AegisError


class K8sError(AegisError):
    """Root of the Kubernetes errors."""


class ApiError(K8sError):
    """The API server refused a request or could not be reached (status 0)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"kubernetes: {status} {reason}: {message}" if status else message)
        self.status = status
        self.reason = reason
        self.api_message = message

    @property
    def not_found(self) -> bool:
        """True for 404."""
        return self.status == 404

    @property
    def conflict(self) -> bool:
        """True for 409 (already exists, or a stale resourceVersion)."""
        return self.status == 409

    @property
    def invalid(self) -> bool:
        """True when the server rejected the object itself (400, 422)."""
        return self.status in (400, 422)

    @property
    def too_large(self) -> bool:
        """True when the request or the object it makes is past the API's size limits: 413,
        or etcd's "request is too large" (which the API server passes on as an error)."""
        return self.status == 413 or "too large" in self.api_message.lower()


class StatusTooLargeError(K8sError):
    """The job's status no longer fits in its Aegis CR (the API's object size limit): saving
    it again cannot succeed, so the job fails (aegis.k8s.status_size)."""


class StatusConflictError(K8sError):
    """Another writer changed the Aegis CR status; reload it before saving again."""


class AegisCrMissingError(K8sError):
    """The Aegis CR does not exist (the Job Controller creates it; was the job deleted?)."""


class RenderError(K8sError):
    """A kustomization cannot be rendered by the built-in renderer."""
