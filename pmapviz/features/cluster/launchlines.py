"""The command lines that run ``python -m pmapviz cluster --join`` on a real cluster, from a
user's numbers: nodes, processes per node, devices per process, and whether those devices
are GPUs or emulated CPU devices. Pure text from whole numbers (nothing typed is evaluated).

Each launcher starts every process with the variables JAX's detection reads
(:mod:`pmapviz.features.cluster.clusterenv`). Which devices a process gets: on Slurm and Open MPI
JAX defaults ``local_device_ids`` to ``[local rank]`` (one GPU per process, GPU number = local
rank), so a process that should drive several GPUs is given ``JAX_LOCAL_DEVICE_IDS``: the same list
for one process per node, or a range computed from its local rank in a small ``bash -c`` wrapper. On
a TPU slice JAX never restricts devices: one process per host drives all of its chips. With CPU
devices each process asks for its own count (``--local-devices``).
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_NODES = 4096
MAX_PER_NODE = 64
MAX_DEVICES = 64  # per process
KINDS = ("gpu", "cpu")
REPORT = "cluster-report.json"
SLURM_RANK = "SLURM_LOCALID"
OMPI_RANK = "OMPI_COMM_WORLD_LOCAL_RANK"


@dataclass(frozen=True)
class Launch:
    """One launcher's command line, its title, and what it starts."""

    title: str
    command: str  # bash
    explains: str  # what it starts and which devices each process gets


def join_command(kind: str, devices: int) -> str:
    """What every process runs: process 0 writes the report."""
    extra = f" --local-devices {int(devices)}" if kind == "cpu" else ""
    return f"python -m pmapviz cluster --join --report {REPORT}{extra}"


def device_ids(rank_var: str, devices: int, command: str) -> str:
    """``command`` with ``JAX_LOCAL_DEVICE_IDS`` set to local rank r's ``jaxstartup`` GPUs
    (r*k .. r*k+k-1), computed by bash in each process."""
    k = int(devices)
    ids = f"$(seq -s, $(({rank_var}*{k})) $(({rank_var}*{k}+{k - 1})))"
    return f"bash -c 'JAX_LOCAL_DEVICE_IDS={ids} exec {command}'"


def _ids(devices: int) -> str:
    return ",".join(str(i) for i in range(int(devices)))


def _who(nodes: int, per_node: int, devices: int, kind: str) -> str:
    n = nodes * per_node
    what = "GPU" if kind == "gpu" else "CPU device"
    return (
        f"{n} process{'es' if n != 1 else ''} ({nodes} node{'s' if nodes != 1 else ''} x "
        f"{per_node}), each with {devices} local {what}{'s' if devices != 1 else ''}: "
        f"{n * devices} global devices."
    )


def _gpu_note(per_node: int, devices: int, rank: str) -> str:
    if devices == 1:
        return f" JAX gives each process GPU number {rank} (its default local_device_ids)."
    if per_node == 1:
        return (
            f" JAX_LOCAL_DEVICE_IDS={_ids(devices)} overrides JAX's default of one GPU "
            "(number = local rank) per process."
        )
    return (
        f" Each process sets JAX_LOCAL_DEVICE_IDS to its own {devices} GPUs from {rank}, "
        "instead of JAX's default of one."
    )


def slurm(nodes: int, per_node: int, devices: int, kind: str) -> Launch:
    """The ``srun`` line: ``nodes`` x ``per_node`` processes, ``jaxstartup`` each."""
    cmd = join_command(kind, devices)
    head = f"srun -N {nodes} --ntasks-per-node {per_node}"
    note = ""
    if kind == "gpu":
        head += f" --gpus-per-node {per_node * devices}"
        note = _gpu_note(per_node, devices, SLURM_RANK)
        if devices > 1 and per_node == 1:
            head = f"JAX_LOCAL_DEVICE_IDS={_ids(devices)} {head}"  # srun exports it
        elif devices > 1:
            cmd = device_ids(SLURM_RANK, devices, cmd)
    return Launch(
        "Slurm",
        f"{head} {cmd}",
        _who(nodes, per_node, devices, kind)
        + " srun sets SLURM_JOB_ID, SLURM_STEP_NODELIST, SLURM_NTASKS, SLURM_PROCID "
        "and SLURM_LOCALID in each task; the coordinator is the first node, port "
        "SLURM_JOB_ID % 4096 + 61440." + note,
    )


def openmpi(nodes: int, per_node: int, devices: int, kind: str, title: str = "Open MPI") -> Launch:
    """The ``mpirun`` line: ``nodes`` x ``per_node`` processes, ``jaxstartup`` each."""
    cmd = join_command(kind, devices)
    head = f"mpirun -np {nodes * per_node}"
    if nodes > 1:
        head += f" --map-by ppr:{per_node}:node --hostfile hosts.txt"
    note = ""
    if kind == "gpu":
        note = _gpu_note(per_node, devices, OMPI_RANK)
        if devices > 1 and per_node == 1:
            head += f" -x JAX_LOCAL_DEVICE_IDS={_ids(devices)}"
        elif devices > 1:
            cmd = device_ids(OMPI_RANK, devices, cmd)
    where = "hosts.txt lists the nodes, one per line. " if nodes > 1 else ""
    return Launch(
        title,
        f"{head} {cmd}",
        _who(nodes, per_node, devices, kind)
        + " "
        + where
        + "Open MPI 4's mpirun sets OMPI_MCA_orte_hnp_uri and OMPI_COMM_WORLD_SIZE, "
        "_RANK, _LOCAL_RANK; the coordinator is mpirun's host." + note,
    )


def tpu_pod(hosts: int) -> Launch:
    """The ``gcloud`` line that starts one process on each of a TPU slice's ``hosts``."""
    cmd = (
        f"gcloud compute tpus tpu-vm ssh $TPU_NAME --zone $ZONE --worker=all "
        f'--command="cd pmapviz && {join_command("tpu", 0)}"'
    )
    return Launch(
        "TPU pod slice",
        cmd,
        f"One process on each of the slice's {hosts} host{'s' if hosts != 1 else ''}, "
        "with all of that host's chips as its local devices (JAX never restricts TPU "
        "devices). JAX reads the worker number and the hosts from the TPU VM's "
        "metadata (on GKE: TPU_WORKER_ID and TPU_WORKER_HOSTNAMES); process 0's "
        "host is the coordinator, port 8482.",
    )


def gpu_host(per_node: int, devices: int) -> Launch:
    """The ``mpirun`` line for one multi-GPU host, and when no cluster is needed at all."""
    found = openmpi(1, per_node, devices, "gpu", "A multi-GPU host")
    return Launch(
        found.title,
        found.command,
        found.explains + " One process per GPU is the usual layout; one process "
        "driving every GPU needs no cluster at all: python -m pmapviz devices lists "
        "them and the app uses them.",
    )


def all_launches(nodes: int, per_node: int, devices: int, kind: str) -> list[Launch]:
    """Slurm, Open MPI, a TPU pod slice (``nodes`` hosts) and one multi-GPU host."""
    return [
        slurm(nodes, per_node, devices, kind),
        openmpi(nodes, per_node, devices, kind),
        tpu_pod(nodes),
        gpu_host(per_node, devices),
    ]
