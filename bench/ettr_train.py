"""The training job of bench/ettr.py: a small GPT-style transformer, DDP over gloo, AdamW, its
batches indexed by the step (a restarted job sees the same data). Runs under torchrun or
`aegis run`; every event is one JSON line appended to ETTR_LOG.

  ETTR_STEPS=N          train steps 0..N-1
  ETTR_MODE=torchsave   rank 0 writes torch.save every ETTR_SAVE_EVERY steps to ETTR_DIR,
                        every rank resumes from the newest file
  ETTR_MODE=aegis       aegis.checkpoint.save every step (asynchronous with ETTR_ASYNC=1);
                        resume from aegis.checkpoint.load()
  ETTR_SLOW=F           while F exists, the rank it names sleeps ETTR_SLOW_S more per step
  ETTR_MODEL=D,L,T      width, layers, tokens per sequence (default 128,2,64)
  ETTR_MEASURE=MB       instead of training: measure saving and restoring a state of MB
                        megabytes (bench/ettr.py's save section; under `aegis run`, one rank)
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

VOCAB = 512
BATCH = 8


class Block(nn.Module):
    """A pre-norm transformer block with causal self-attention."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """Token and position embeddings, blocks, a tied language-model head."""

    def __init__(self, width: int, layers: int, tokens: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(VOCAB, width)
        self.pos = nn.Embedding(tokens, width)
        self.blocks = nn.ModuleList(Block(width, max(width // 64, 1)) for _ in range(layers))
        self.ln = nn.LayerNorm(width)
        self.register_buffer("mask", torch.triu(torch.ones(tokens, tokens, dtype=torch.bool), 1))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x, self.mask)
        return self.ln(x) @ self.tok.weight.t()


def batch(step: int, rank: int, tokens: int) -> torch.Tensor:
    """The batch of `step` for `rank`: sequences of a fixed random bigram walk."""
    g = torch.Generator().manual_seed(step * 1009 + rank)
    start = torch.randint(0, VOCAB, (BATCH, 1), generator=g)
    walk = (start + torch.arange(tokens + 1) * 7) % VOCAB
    noise = torch.randint(0, VOCAB, walk.shape, generator=g)
    return torch.where(torch.rand(walk.shape, generator=g) < 0.1, noise, walk)


class Log:
    """ETTR_LOG: one JSON object per line, flushed at once."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
        self.f = open(os.environ["ETTR_LOG"], "a")  # noqa: SIM115 - the job's whole life

    def __call__(self, event: str, **fields: Any) -> None:
        rec = {"e": event, "rank": self.rank, "attempt": self.attempt, "t": time.time(), **fields}
        self.f.write(json.dumps(rec) + "\n")
        self.f.flush()


def model_shape() -> tuple[int, int, int]:
    width, layers, tokens = (int(x) for x in os.environ.get("ETTR_MODEL", "128,2,64").split(","))
    return width, layers, tokens


def resume_torch(path: Path) -> tuple[dict[str, Any] | None, float]:
    """The newest torch.save file, and how long reading it took."""
    started = time.perf_counter()
    if not path.exists():
        return None, 0.0
    return torch.load(path, weights_only=False), time.perf_counter() - started


def train(log: Log, rank: int) -> None:
    mode = os.environ.get("ETTR_MODE", "torchsave")
    steps, every = int(os.environ["ETTR_STEPS"]), int(os.environ.get("ETTR_SAVE_EVERY", "50"))
    width, layers, tokens = model_shape()
    torch.manual_seed(0)
    model = DDP(GPT(width, layers, tokens))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    ckpt_file = Path(os.environ.get("ETTR_DIR", ".")) / "last.pt"
    start = 0
    if mode == "aegis":
        import aegis.checkpoint

        restored = aegis.checkpoint.load()
        if restored is not None:
            model.module.load_state_dict(restored.state["model"])
            opt.load_state_dict(restored.state["optim"])
            start = restored.step + 1
            log("restored", step=restored.step, source=restored.source, s=restored.seconds)
    else:
        state, seconds = resume_torch(ckpt_file)
        if state is not None:
            model.module.load_state_dict(state["model"])
            opt.load_state_dict(state["optim"])
            start = state["step"] + 1
            log("restored", step=state["step"], source="disk", s=seconds)
    slow_flag, slow_s = os.environ.get("ETTR_SLOW", ""), float(os.environ.get("ETTR_SLOW_S", "0.2"))
    for step in range(start, steps):
        began = time.perf_counter()
        idx = batch(step, rank, tokens)
        logits = model(idx[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), idx[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if (
            slow_flag
            and os.path.exists(slow_flag)
            and Path(slow_flag).read_text().strip() == str(rank)
        ):
            time.sleep(slow_s)
        compute = time.perf_counter() - began
        save_s, persisting = 0.0, False
        if mode == "aegis":
            import aegis.checkpoint

            r = aegis.checkpoint.save(
                {"model": model.module.state_dict(), "optim": opt.state_dict()},
                step,
                asynchronous=os.environ.get("ETTR_ASYNC") == "1",
            )
            save_s, persisting = r.seconds, r.persisting
        elif step % every == 0 and rank == 0:
            t0 = time.perf_counter()
            tmp = ckpt_file.with_suffix(".tmp")
            torch.save(
                {"model": model.module.state_dict(), "optim": opt.state_dict(), "step": step}, tmp
            )
            os.replace(tmp, ckpt_file)
            save_s = time.perf_counter() - t0
        log(
            "step",
            step=step,
            loss=round(loss.item(), 4),
            dt=time.perf_counter() - began,
            compute=compute,
            save_s=save_s,
            persisting=persisting,
        )
    log("done", step=steps - 1)


class Trainer:
    """A GPT and its AdamW of about `mb` megabytes of state (params and two moments)."""

    def __init__(self, mb: int) -> None:
        width = 512
        layers = max(1, round(mb * 2**20 / (3 * 4 * 12 * width * width)))
        self.model = GPT(width, layers, 64)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        self.n = 0
        self.step()

    def step(self) -> None:
        """One training step (forward, backward, optimizer step)."""
        idx = batch(self.n, 0, 64)
        logits = self.model(idx[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), idx[:, 1:].reshape(-1))
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.n += 1

    def state(self) -> dict[str, Any]:
        return {"model": self.model.state_dict(), "optim": self.opt.state_dict()}


def tensors_of(x: Any) -> list[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, dict):
        return [t for v in x.values() for t in tensors_of(v)]
    if isinstance(x, list | tuple):
        return [t for v in x for t in tensors_of(v)]
    return []


def best(fn: Any, n: int = 3) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def timed(fn: Any, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def agent_pid() -> int:
    """This rank's Aegis agent: the nearest ancestor running `aegis.cli agent` (a rank's
    parent is its reaper)."""
    pid = os.getpid()
    while pid > 1:
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        if b"aegis.cli\0agent" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return pid
    raise RuntimeError("not under an Aegis agent")


def measure(log: Log, mb: int) -> int:
    """Save (attempt 0), restore from memory (attempt 1, after a crash) and from disk
    (attempt 2, after a node loss) a training state of `mb` MB, beside a plain memcpy,
    torch.save and torch.load. Under `aegis run -n 1 --checkpoint-every 5`."""
    import ctypes
    import signal

    import aegis.checkpoint

    torch.set_num_threads(1)  # one thread per rank, as with several ranks on a node
    torch.manual_seed(0)
    trainer = Trainer(mb)
    sd = trainer.state()
    src = tensors_of(sd)
    nbytes = sum(t.numel() * t.element_size() for t in src)
    where = Path(os.environ["ETTR_DIR"])
    if log.attempt == 0:
        dst = [torch.empty_like(t) for t in src]
        pairs = [
            (d.data_ptr(), s.data_ptr(), s.numel() * s.element_size())
            for d, s in zip(dst, src, strict=True)
        ]

        def plain_memcpy() -> None:
            for to, frm, n in pairs:
                ctypes.memmove(to, frm, n)

        plain_memcpy()  # pages of the destination allocated before the timing
        memcpy = best(plain_memcpy)
        del dst, pairs
        path = where / "state.pt"

        def torch_save(sync: bool) -> None:
            with open(path, "wb") as f:
                torch.save(sd, f)
                if sync:
                    f.flush()
                    os.fsync(f.fileno())

        torch_save(False)
        save_no_sync = best(lambda: torch_save(False))
        save_sync = best(lambda: torch_save(True))
        load_disk = best(lambda: torch.load(path, weights_only=False), n=2)
        # not multiples of 5 (--checkpoint-every 5): the blocking of a copy alone, into the
        # rank's two version files once they exist (saves 1 and 2 make them)
        ids = (1, 2, 3, 4, 6, 7, 8)
        saved = [aegis.checkpoint.save(trainer.state(), s).seconds for s in ids][2:]
        quiet = timed(trainer.step, 4)  # a training step, no save
        asaved = []

        def step_async_save() -> None:  # its copy runs beside the next step's compute
            trainer.step()
            r = aegis.checkpoint.save(trainer.state(), 101 + 5 * trainer.n, asynchronous=True)
            asaved.append(r.seconds)

        with_async = timed(step_async_save, 4)
        aegis.checkpoint.wait()
        # the step right after a save the agent persists (a multiple of 5), beside the copy
        aegis.checkpoint.save(trainer.state(), 1000)
        during = timed(trainer.step, 1)
        quiet += timed(trainer.step, 3)
        log(
            "measure",
            bytes=nbytes,
            memcpy=memcpy,
            aegis_save=sorted(saved),
            aegis_save_async=asaved[1:],
            torch_save=save_no_sync,
            torch_save_fsync=save_sync,
            torch_load=load_disk,
            step_quiet=statistics.median(quiet),
            step_with_async_save=with_async[1:],
            step_during_persist=during,
        )
        aegis.checkpoint.save(sd, 1005)  # persisted too: what attempt 2 reads back
        time.sleep(3.0)  # its persist is done
        sys.stdout.flush()
        os._exit(3)  # a crash: `aegis run` restarts the rank in place, its state in memory
    restored = aegis.checkpoint.load()
    assert restored is not None
    t0 = time.perf_counter()
    for d, s in zip(tensors_of(sd), tensors_of(restored.state), strict=True):
        d.copy_(s)
    log(
        "restore",
        source=restored.source,
        s=restored.seconds,
        into_model=restored.seconds + time.perf_counter() - t0,
        step=restored.step,
    )
    if restored.source == "memory":  # now a node loss: the agent and this rank die
        sys.stdout.flush()
        os.kill(agent_pid(), signal.SIGKILL)
        os._exit(9)
    import torch.distributed.checkpoint as dcp  # the persisted copy, read without Aegis

    newest = sorted(where.glob("ckpt/step-*"))[-1] / "rank-00000"
    t0 = time.perf_counter()
    dcp.load(sd, checkpoint_id=newest, no_dist=True)
    log("dcp_load", s=time.perf_counter() - t0)
    return 0


def main() -> int:
    rank = int(os.environ.get("RANK", "0"))
    log = Log(rank)
    log("start", pid=os.getpid(), ppid=os.getppid())
    measure_mb = int(os.environ.get("ETTR_MEASURE", "0"))
    if measure_mb:
        return measure(log, measure_mb)
    dist.init_process_group(
        "gloo", timeout=timedelta(seconds=float(os.environ.get("ETTR_PG_TIMEOUT", "60")))
    )
    log("pg")
    train(log, rank)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # past gloo's teardown, as examples/train_ddp.py does
