"""Bytes kept in ConfigMaps owned by an Aegis CR: a blob split over objects of bounded size.

A job too large for its CR keeps its write-ahead log and its snapshots in ConfigMaps
(aegis.k8s.cm_wal, aegis.k8s.chunked_store). Each object holds one part of a zlib-compressed
blob in `binaryData`, with labels naming the CR and the blob, and an annotation giving the
number of parts; it is owned by the CR, so deleting the job deletes it. The API server keeps
a ConfigMap of at most 1 MiB of data, and etcd a request of at most 1.5 MiB: a part holds at
most PART_BYTES (base64 makes it 4/3 as large in the request).
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from aegis.k8s.resources import AEGIS, GROUP

PART_BYTES = 700_000
LABEL_CR = f"{GROUP}/cr"  # the Aegis CR the object belongs to
LABEL_BLOB = f"{GROUP}/blob"  # "wal" or "snapshot"
LABEL_NUMBER = f"{GROUP}/number"  # the WAL record's number, or the snapshot's generation
ANNOTATION_PART = f"{GROUP}/part"  # "k/K": part k (from 0) of K
KEY = "part"


def split(data: bytes, limit: int = PART_BYTES) -> list[bytes]:
    """`data` compressed and cut into parts of at most `limit` bytes (at least one part)."""
    packed = zlib.compress(data, 1)
    return [packed[i : i + limit] for i in range(0, len(packed), limit)] or [b""]


def join(parts: Sequence[bytes]) -> bytes:
    """The data `split` cut into `parts` (zlib.error if they are not whole)."""
    return zlib.decompress(b"".join(parts))


def owner_reference(cr: Mapping[str, Any]) -> dict[str, Any]:
    """The ownerReference that makes an object go with the Aegis CR `cr`."""
    meta = cr.get("metadata") or {}
    return {
        "apiVersion": AEGIS.api_version,
        "kind": AEGIS.kind,
        "name": str(meta.get("name", "")),
        "uid": str(meta.get("uid", "")),
    }


def part_object(
    name: str,
    cr: str,
    blob: str,
    number: int,
    part: tuple[int, int],
    data: bytes,
    owner: Mapping[str, Any],
) -> dict[str, Any]:
    """The ConfigMap holding part `part` = (k, K) of blob `blob` number `number` of `cr`."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "labels": {LABEL_CR: cr, LABEL_BLOB: blob, LABEL_NUMBER: str(number)},
            "annotations": {ANNOTATION_PART: f"{part[0]}/{part[1]}"},
            "ownerReferences": [dict(owner)],
        },
        "binaryData": {KEY: base64.b64encode(data).decode("ascii")},
    }


def selector(cr: str, blob: str) -> str:
    """The label selector of a CR's objects of one blob kind."""
    return f"{LABEL_CR}={cr},{LABEL_BLOB}={blob}"


def is_part_of(obj: Mapping[str, Any], cr: str, blob: str, uid: str | None) -> bool:
    """Whether `obj` is a part of the blobs of kind `blob` of the Aegis CR `cr` whose uid is
    `uid` (not of an earlier CR of that name whose objects await the garbage collector; None:
    of any CR of that name). Labels are checked here too: the API's label selector is not
    relied on."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    owners = meta.get("ownerReferences") or []
    if not isinstance(labels, Mapping) or not isinstance(owners, list):
        return False
    if (labels.get(LABEL_CR), labels.get(LABEL_BLOB)) != (cr, blob):
        return False
    return uid is None or any(_owner_uid(o) == uid for o in owners)


def _owner_uid(owner: Any) -> Any:
    """An ownerReference's uid (None if it is not an object)."""
    return owner.get("uid") if isinstance(owner, Mapping) else None


def uid_tag(owner: Mapping[str, Any]) -> str:
    """The first 8 characters of the owner CR's uid, in its objects' names: a CR made again
    under the same name does not meet the objects of the one before."""
    return str(owner.get("uid", ""))[:8] or "nouid"


def parsed_part(obj: Mapping[str, Any]) -> tuple[int, int, int, bytes] | None:
    """(number, k, K, data) of a part object; None if it is not one (a bad label, annotation
    or payload)."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    payload = (obj.get("binaryData") or {}).get(KEY)
    try:
        number = int(labels[LABEL_NUMBER])
        k, total = (int(x) for x in str(annotations[ANNOTATION_PART]).split("/"))
        data = base64.b64decode(str(payload), validate=True)
    except (KeyError, TypeError, ValueError):
        return None
    if not 0 <= k < total:
        return None
    return number, k, total, data


def name_of(obj: Mapping[str, Any]) -> str:
    """An object's name."""
    return str((obj.get("metadata") or {}).get("name", ""))
