"""What Slurm tells `srun aegis run`: the node count, this node's index and node 0's host.

Slurm writes node lists in its hostlist syntax (`gpu[01-04,07],login1`, and several bracket
groups per name, `rack[1-2]-n[1-2]`, expanded as a product); `expand_hostlist` turns one into
the host names in Slurm's order, so node 0 is the first host of the step's node list.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from aegis.errors import AegisError

DEFAULT_RDZV_PORT = 29400  # torchrun's c10d rendezvous port
MAX_HOSTS = 1 << 20  # a node list that expands past this is refused, not expanded
_RANGE = re.compile(r"(\d+)(?:-(\d+))?")
_TASKS = re.compile(r"(\d+)(?:\(x(\d+)\))?")


class HostlistError(AegisError, ValueError):
    """A Slurm node list that does not follow the hostlist syntax (the message says where)."""


def expand_hostlist(text: str) -> list[str]:
    """The host names of a Slurm node list, in order (`n[1-2],m` -> n1, n2, m)."""
    hosts: list[str] = []
    for item in _split_top(text.strip()):
        if not item:
            raise HostlistError(f"node list {text!r}: an empty host name")
        hosts.extend(_expand_item(item, text))
        if len(hosts) > MAX_HOSTS:
            raise HostlistError(f"node list {text!r} names more than {MAX_HOSTS} hosts")
    if not hosts:
        raise HostlistError("the node list is empty")
    return hosts


def _split_top(text: str) -> Iterator[str]:
    """The comma-separated items of a node list, commas inside brackets kept."""
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise HostlistError(f"node list {text!r}: nested '[' at {i}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"node list {text!r}: ']' without '[' at {i}")
        elif ch == "," and depth == 0:
            yield text[start:i]
            start = i + 1
    if depth:
        raise HostlistError(f"node list {text!r}: '[' without ']'")
    yield text[start:]


def _expand_item(item: str, whole: str) -> list[str]:
    """One host pattern: literal text and bracket groups, each group a set of choices (the
    first group varies slowest, as Slurm writes them)."""
    names, pos = [""], 0
    for m in re.finditer(r"\[([^\]]*)\]", item):
        literal = item[pos : m.start()]
        choices = _expand_group(m.group(1), whole)
        if len(names) * len(choices) > MAX_HOSTS:
            raise HostlistError(f"node list {whole!r} names more than {MAX_HOSTS} hosts")
        names = [n + literal + c for n in names for c in choices]
        pos = m.end()
    return [n + item[pos:] for n in names]


def _expand_group(group: str, whole: str) -> list[str]:
    """`01-03,7` -> 01, 02, 03, 7: each range keeps its lower bound's zero padding."""
    out: list[str] = []
    for part in group.split(","):
        m = _RANGE.fullmatch(part.strip())
        if m is None:
            raise HostlistError(f"node list {whole!r}: {part!r} is not N or N-M")
        low_text, high_text = m.group(1), m.group(2)
        low = int(low_text)
        high = low if high_text is None else int(high_text)
        if high < low:
            raise HostlistError(f"node list {whole!r}: range {part!r} runs backwards")
        if high - low + len(out) >= MAX_HOSTS:
            raise HostlistError(f"node list {whole!r} names more than {MAX_HOSTS} hosts")
        width = len(low_text)
        out.extend(str(i).zfill(width) for i in range(low, high + 1))
    return out


def max_tasks_per_node(text: str) -> int:
    """The most tasks on one node from SLURM_STEP_TASKS_PER_NODE (`2(x3),1` -> 2)."""
    counts = []
    for part in text.split(","):
        m = _TASKS.fullmatch(part.strip())
        if m is None:
            raise HostlistError(f"tasks per node {text!r}: {part!r} is not N or N(xM)")
        counts.append(int(m.group(1)))
    return max(counts)


@dataclass(frozen=True)
class SlurmNodes:
    """This step's nodes as Slurm describes them."""

    nnodes: int
    node_rank: int
    first_host: str

    @property
    def rdzv_endpoint(self) -> str:
        """Node 0's rendezvous on torchrun's default port."""
        return f"{self.first_host}:{DEFAULT_RDZV_PORT}"


def _first(env: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = env.get(name)
        if value:
            return value
    return None


def slurm_nodes(env: Mapping[str, str]) -> SlurmNodes | None:
    """The step's nodes from Slurm's variables (a step's own first, then the job's); None
    outside Slurm. HostlistError when Slurm's values do not make sense, or when srun started
    more than one task on a node (aegis run is one process per node, like torchrun)."""
    node_id = env.get("SLURM_NODEID")
    nnodes = _first(env, "SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES")
    nodelist = _first(env, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")
    if node_id is None or nnodes is None or nodelist is None:
        return None
    tasks = _first(env, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE")
    if tasks is not None and max_tasks_per_node(tasks) > 1:
        raise HostlistError(
            f"srun started {max_tasks_per_node(tasks)} tasks on a node (SLURM_STEP_TASKS_PER_NODE="
            f"{tasks}): aegis run starts the node's ranks itself; use `srun --ntasks-per-node=1`"
        )
    try:
        count, rank = int(nnodes), int(node_id)
    except ValueError:
        raise HostlistError(f"SLURM_NNODES={nnodes!r} / SLURM_NODEID={node_id!r}") from None
    hosts = expand_hostlist(nodelist)
    if count != len(hosts) or not 0 <= rank < count:
        raise HostlistError(
            f"Slurm says {count} nodes and node {rank}, but its node list {nodelist!r} has "
            f"{len(hosts)} hosts"
        )
    return SlurmNodes(count, rank, hosts[0])
