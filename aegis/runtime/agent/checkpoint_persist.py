"""Copy one committed version from shared memory to the checkpoint directory (a thread's work).

The data file is copied by the kernel (copy_file_range, else sendfile), so the version is
read once and never passes through Python; its index and metadata are small. The copy runs
at full speed and calls `copied()` as soon as the version's bytes are out of shared memory,
so a save waiting for that file goes on while the new files are synced to disk and renamed
into place (disk.publish_rank_dir). The copy thread keeps its normal priority: a niced copy
in the kernel stretches out and slows the steps beside it for longer (docs/checkpoints.md,
"Persisting, off the training's path").
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from aegis.checkpoint import disk, wire


def _copy_range(src: int, dst: int, offset: int, count: int) -> None:
    done, kernel_copy = 0, True
    while done < count:
        n = 0
        if kernel_copy:
            try:
                n = os.copy_file_range(src, dst, count - done, offset + done)
            except OSError:  # not between these filesystems (EXDEV from tmpfs): sendfile
                kernel_copy = False
        if not kernel_copy:
            n = os.sendfile(dst, src, offset + done, count - done)
        if n <= 0:
            raise OSError(f"short copy: {done} of {count} bytes")
        done += n


def persist_version(
    version: Path,
    root: Path,
    step: int,
    rank: int,
    copied: Callable[[], None],
) -> wire.Header:
    """Persist the version file `version` (which must hold `step`) as rank `rank`'s directory
    of `step` under `root`; `copied()` is called once the shared memory was read (also on
    failure). OSError when the directory cannot be written; wire.WireError when the file is
    not a whole version of `step`."""
    released = False

    def release() -> None:
        nonlocal released
        if not released:
            released = True
            copied()

    try:
        with open(version, "rb") as src:
            size = os.fstat(src.fileno()).st_size
            head = wire.Header.unpack(src.read(wire.HEADER.size), size)
            if head.step != step:
                raise wire.WireError(f"{version} holds step {head.step}, not {step}")
            src.seek(head.index_off)
            index = src.read(head.index_len)
            src.seek(head.meta_off)
            meta = src.read(head.meta_len)

            def fill(tmp: Path) -> None:
                with open(tmp / disk.DATA_FILE, "wb") as out:
                    _copy_range(src.fileno(), out.fileno(), wire.DATA_OFFSET, head.data_len)
                release()
                (tmp / disk.INDEX_FILE).write_bytes(index)
                if meta:
                    (tmp / disk.METADATA_FILE).write_bytes(meta)

            disk.publish_rank_dir(root, step, rank, fill)
    finally:
        release()
    return head


def publish_global_metadata(root: Path, step: int, meta: bytes) -> None:
    """Write a sharded save's global `.metadata` into its step's directory (atomically)."""
    here = disk.step_dir(root, step)
    here.mkdir(parents=True, exist_ok=True)
    tmp = here / f"{disk.METADATA_FILE}{disk.TMP}{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(meta)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, here / disk.METADATA_FILE)
