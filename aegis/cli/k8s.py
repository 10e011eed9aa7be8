"""`aegis k8s …`: run the controllers, render the manifests, make the NATS keys."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from types import FrameType

from aegis.k8s.api import POOL_SIZE, KubeApi
from aegis.k8s.job_controller import (
    POD_CALLS,
    RECONCILE_WORKERS,
    JobController,
    JobControllerConfig,
)
from aegis.k8s.keys import DEFAULT_NAMESPACE, generate_keys, key_manifests
from aegis.k8s.manifests import DEFAULT_CONTROLLER_ADDRESS, PodSettings
from aegis.k8s.render import dump, render
from aegis.k8s.status_size import MAX_STATUS_BYTES


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `k8s` and its subcommands to the given subparsers."""
    k8s = sub.add_parser("k8s", help="run Aegis on Kubernetes")
    k8s_sub = k8s.add_subparsers(dest="k8s_command", required=True, metavar="SUBCOMMAND")
    _register_job_controller(k8s_sub)
    _register_controller(k8s_sub)
    p = k8s_sub.add_parser("render", help="print the manifests of a kustomization (no kubectl)")
    p.add_argument("dir", nargs="?", default="deploy/base", help="kustomization directory")
    p.set_defaults(func=render_func)
    p = k8s_sub.add_parser("keys", help="print the NATS auth ConfigMap and account Secret")
    p.add_argument("--namespace", default=DEFAULT_NAMESPACE, help="where Aegis is installed")
    p.set_defaults(func=keys_func)


def _register_job_controller(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("job-controller", help="run the Job Controller (AegisJob -> pods + CR)")
    p.add_argument("--kubeconfig", default=None, help="kubeconfig file (default: in-cluster)")
    p.add_argument("--context", default=None, help="kubeconfig context")
    p.add_argument("--namespace", default=None, help="watch one namespace (default: all)")
    p.add_argument(
        "--controller-address",
        default=DEFAULT_CONTROLLER_ADDRESS,
        help="gRPC address of the Aegis Controller, given to the agents",
    )
    p.add_argument("--resync", type=float, default=30.0, metavar="S", help="full resync period")
    p.add_argument(
        "--pod-calls",
        type=_within_pool,
        default=POD_CALLS,
        metavar="N",
        help=f"pod creations or deletions in flight at once, 1-{POOL_SIZE} (default {POD_CALLS})",
    )
    p.add_argument(
        "--reconcile-workers",
        type=_within_pool,
        default=RECONCILE_WORKERS,
        metavar="N",
        help=f"jobs reconciled at once, 1-{POOL_SIZE} (default {RECONCILE_WORKERS})",
    )
    p.add_argument("--once", action="store_true", help="reconcile every job once and exit")
    p.set_defaults(func=job_controller_func)


def _within_pool(text: str) -> int:
    """1 to the client's connection pool (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 1 <= value <= POOL_SIZE:
        raise argparse.ArgumentTypeError(f"{value} is not within 1-{POOL_SIZE}")
    return value


def _register_controller(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from aegis.k8s import aegis_controller as ac

    p = sub.add_parser("controller", help="run the Aegis Controller (one master per Aegis CR)")
    p.add_argument("--kubeconfig", default=None, help="kubeconfig file (default: in-cluster)")
    p.add_argument("--context", default=None, help="kubeconfig context")
    p.add_argument("--namespace", default=None, help="watch one namespace (default: all)")
    p.add_argument("--grpc-host", default="0.0.0.0", help="address the credential server binds")
    p.add_argument(
        "--grpc-port", type=int, default=ac.DEFAULT_GRPC_PORT, help="credential server port"
    )
    p.add_argument(
        "--nats-url",
        default=ac.DEFAULT_NATS_URL,
        help="NATS URL, used by the controller and handed to the agents",
    )
    p.add_argument(
        "--nats-account-dir",
        default=ac.DEFAULT_ACCOUNT_DIR,
        help="directory holding account.jwt and account.seed (the Secret aegis-nats-account)",
    )
    p.add_argument("--resync", type=float, default=30.0, metavar="S", help="full resync period")
    p.add_argument(
        "--metrics-port",
        type=int,
        default=ac.DEFAULT_METRICS_PORT,
        help="serve GET /metrics on this port (0: off)",
    )
    p.add_argument(
        "--max-object-bytes",
        type=_object_bytes,
        default=MAX_STATUS_BYTES,
        metavar="B",
        help="the largest object the API server keeps (etcd's --max-request-bytes, default "
        f"{MAX_STATUS_BYTES}): a job whose status could outgrow it keeps it in ConfigMaps",
    )
    p.set_defaults(func=controller_func)


def _object_bytes(text: str) -> int:
    """A size of at least 64 KiB (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of bytes: {text!r}") from None
    if value < 64 << 10:
        raise argparse.ArgumentTypeError(f"{value} is below 65536: no API server keeps so little")
    return value


def controller_func(args: argparse.Namespace) -> int:
    """Run the Aegis Controller until SIGTERM/SIGINT."""
    from aegis.k8s import aegis_controller as ac
    from aegis.k8s.credential_process import ApiSource
    from aegis.runtime.controller.gc_tuning import tune_controller_process

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    tune_controller_process()
    account = ac.load_account_dir(args.nats_account_dir)
    api = KubeApi.from_config(args.kubeconfig, args.context)
    config = ac.AegisControllerConfig(
        nats_url=args.nats_url,
        namespace=args.namespace,
        resync_s=args.resync,
        status_limit_bytes=args.max_object_bytes,
    )
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        ac.serve(
            api,
            account,
            config,
            stop,
            api_source=ApiSource(kubeconfig=args.kubeconfig, context=args.context),
            grpc_host=args.grpc_host,
            grpc_port=args.grpc_port,
            metrics_port=args.metrics_port,
        )
        return 0
    finally:
        api.close()


def job_controller_func(args: argparse.Namespace) -> int:
    """Run the Job Controller until SIGTERM/SIGINT (or one pass with --once)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    api = KubeApi.from_config(args.kubeconfig, args.context)
    config = JobControllerConfig(
        namespace=args.namespace,
        pod=PodSettings(controller_address=args.controller_address),
        resync_s=args.resync,
        pod_calls=args.pod_calls,
        reconcile_workers=args.reconcile_workers,
    )
    controller = JobController(api, config)
    try:
        if args.once:
            controller.sync_all()
            return 0
        stop = threading.Event()

        def on_signal(signum: int, frame: FrameType | None) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        controller.run(stop)
        return 0
    finally:
        api.close()


def render_func(args: argparse.Namespace) -> int:
    """Print the rendered kustomization."""
    sys.stdout.write(render(args.dir))
    return 0


def keys_func(args: argparse.Namespace) -> int:
    """Print fresh NATS keys as manifests, for `| kubectl apply -f -`."""
    sys.stdout.write(dump(key_manifests(generate_keys(), args.namespace)))
    return 0
