"""Kubernetes: CRDs, the Job Controller, the CR-backed status store, manifests and keys.

Layering: `reconcile`, `manifests`, `model`, `resources` and `render` are pure; `api` is the only
module that talks HTTP; `job_controller` and `cr_store` put the two together.
"""
