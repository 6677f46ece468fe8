"""Which cluster this process runs in, as ``jax.distributed.initialize()`` decides it, and what
is missing when it cannot.

With no arguments, ``jax.distributed.initialize()`` asks JAX's cluster classes (subclasses of
``jax._src.clusters.ClusterEnv``), in JAX's order, whether they are present, and takes the first
that is: Open MPI (``OMPI_MCA_orte_hnp_uri``, set by an Open MPI 4 ``mpirun``), Slurm (all five of
``SLURM_JOB_ID``, ``SLURM_STEP_NODELIST``, ``SLURM_NTASKS``, ``SLURM_PROCID``, ``SLURM_LOCALID``,
set by ``srun`` in each task), mpi4py (opt-in only), a Cloud TPU VM (its metadata server), a TPU
slice on GKE (``TPU_WORKER_HOSTNAMES`` or ``TPU_PROCESS_ADDRESSES`` on a Cloud TPU VM) and
Kubernetes (``KUBERNETES_SERVICE_HOST`` with the ``kubernetes`` package).
``JAX_COORDINATOR_ADDRESS``, ``JAX_COORDINATOR_PORT``, ``JAX_COORDINATOR_BIND_ADDRESS`` and
``JAX_LOCAL_DEVICE_IDS`` override parts of what it finds. (JAX 0.10.2: ``jax/_src/clusters/`` and
``jax/_src/distributed.py``; tests/features/cluster/test_clusterenv.py checks these names against
it.)

:func:`jax_choice` asks JAX's own classes; :func:`diagnose` (pure: an environment in, a
:class:`Detection` out) says which environment that is and, before anything is started, the
one thing that would make joining fail: a variable missing, not a whole number, or a rank out
of range; JAX itself would raise a ``KeyError`` or ``ValueError`` deep inside, or hang (a bind
address without its port). Only the variables named here are ever read back or reported.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

MAX_VALUE = 200  # characters of a variable kept in a report or a message


@dataclass(frozen=True)
class Environment:
    """One of JAX's cluster environments: how JAX detects it, what it then reads."""

    name: str  # in words: "Slurm"
    jax_class: str  # JAX's ClusterEnv subclass
    detect: tuple[str, ...]  # variables JAX looks at to decide whether it is present
    reads: tuple[str, ...]  # whole numbers JAX reads once it is: count, rank, local rank
    started_by: str  # what normally sets the variables


OMPI = Environment(
    "Open MPI",
    "OmpiCluster",
    ("OMPI_MCA_orte_hnp_uri",),
    ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"),
    "mpirun or mpiexec (Open MPI 4)",
)
SLURM = Environment(
    "Slurm",
    "SlurmCluster",
    ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID"),
    ("SLURM_JOB_ID", "SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID"),
    "srun, in each task of a job step (a batch script alone has no SLURM_STEP_NODELIST)",
)
MPI4PY = Environment("mpi4py", "Mpi4pyCluster", (), (), "an MPI launcher (opt-in only)")
GKE_TPU = Environment(
    "a TPU slice on GKE",
    "GkeTpuCluster",
    ("TPU_WORKER_HOSTNAMES", "TPU_PROCESS_ADDRESSES"),
    ("TPU_WORKER_ID",),
    "GKE, on each TPU host",
)
GCE_TPU = Environment(
    "a Cloud TPU VM", "GceTpuCluster", (), (), "gcloud compute tpus tpu-vm ssh ... --worker=all"
)
K8S = Environment(
    "Kubernetes",
    "K8sCluster",
    ("KUBERNETES_SERVICE_HOST",),
    (),
    "a Kubernetes job (needs pip install jax[k8s])",
)
# JAX's order: its classes register as they are defined (ClusterEnv.__init_subclass__), and
# cloud_tpu_cluster.py defines GceTpuCluster before GkeTpuCluster
ORDER = (OMPI, SLURM, MPI4PY, GCE_TPU, GKE_TPU, K8S)
BY_CLASS = {e.jax_class: e for e in ORDER}
OVERRIDES = (
    "JAX_COORDINATOR_ADDRESS",
    "JAX_COORDINATOR_PORT",
    "JAX_COORDINATOR_BIND_ADDRESS",
    "JAX_LOCAL_DEVICE_IDS",
)
RANKS = {
    "OmpiCluster": ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    "SlurmCluster": ("SLURM_PROCID", "SLURM_NTASKS"),
}
_WHOLE = re.compile(r"[0-9]{1,9}")
_HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):[0-9]{1,5}")


@dataclass(frozen=True)
class Detection:
    """What ``jax.distributed.initialize()`` would find here, and whether it can work."""

    env: Environment | None  # JAX's choice, None when it finds nothing
    problem: str | None  # one sentence: why joining cannot work; None when nothing is missing
    variables: dict[str, str] = field(default_factory=dict)  # the ones named here that are set
    process_id: int | None = None
    process_count: int | None = None
    coordinator: str | None = None  # where JAX will connect, where it can be told beforehand

    @property
    def name(self) -> str:
        """The environment's name, or "no cluster environment"."""
        return self.env.name if self.env else "no cluster environment"

    def describe(self) -> str:
        """'Slurm detected (SlurmCluster): process 1 of 2, coordinator localhost:61586'."""
        if self.env is None:
            return "no cluster environment detected"
        out = f"{self.env.name} detected ({self.env.jax_class})"
        if self.process_id is not None and self.process_count is not None:
            out += f": process {self.process_id} of {self.process_count}"
        if self.coordinator:
            out += f", coordinator {self.coordinator}"
        return out

    def to_json(self) -> dict:
        """The detection as a report's ``environment``: name, JAX class, coordinator, variables."""
        return {
            "name": self.name,
            "jax_class": self.env.jax_class if self.env else None,
            "coordinator": self.coordinator,
            "variables": dict(self.variables),
        }


def jax_choice() -> str | None:
    """The class JAX's own detection picks: the first ``ClusterEnv`` subclass, in JAX's order,
    that is not opt-in and says ``is_env_present()`` (as ``auto_detect_unset_distributed_params``
    does when no ``cluster_detection_method`` is given); None when none does."""
    from jax._src import clusters

    for env in clusters.ClusterEnv._cluster_types:
        if not env.opt_in_only_method and env.is_env_present():
            return env.__name__
    return None


def coordinator(jax_class: str | None, env: Mapping[str, str]) -> str | None:
    """Where process 0's coordinator will be, by JAX's own code, where that reads only the
    environment (Open MPI, Slurm) or an override; None elsewhere (a TPU's comes from its
    metadata) or when it cannot be read."""
    if env.get("JAX_COORDINATOR_ADDRESS"):
        return _cut(env["JAX_COORDINATOR_ADDRESS"])
    if jax_class not in RANKS:
        return None
    from jax._src import clusters

    try:
        found = getattr(clusters, jax_class).get_coordinator_address(
            timeout_secs=None, override_coordinator_port=env.get("JAX_COORDINATOR_PORT")
        )
    except (KeyError, ValueError, RuntimeError, IndexError):
        return None
    return _cut(found)


def detect(env: Mapping[str, str] = os.environ) -> Detection:
    """:func:`diagnose` this process's environment with JAX's own choice, and the coordinator."""
    chosen = jax_choice()
    found = diagnose(env, chosen)
    if found.problem is None:
        where = coordinator(chosen, env)
        bind = env.get("JAX_COORDINATOR_BIND_ADDRESS")
        found = Detection(
            found.env,
            port_problem(where, bind),
            found.variables,
            found.process_id,
            found.process_count,
            where,
        )
    return found


def port_problem(where: str | None, bind: str | None) -> str | None:
    """A bind address on another port than the coordinator's: process 0 would listen where no
    process connects, and every process would wait until its timeout."""
    if not where or not bind or ":" not in where:
        return None
    port, bound = where.rsplit(":", 1)[1], bind.strip().rsplit(":", 1)[1]
    if port == bound:
        return None
    return (
        f"JAX_COORDINATOR_BIND_ADDRESS={_cut(bind, 60)!r} listens on port {bound}, but the "
        f"processes connect to the coordinator {where}: use the same port "
        f"(e.g. 127.0.0.1:{port})."
    )


def diagnose(env: Mapping[str, str], chosen: str | None) -> Detection:
    """What JAX's choice ``chosen`` (a class name, or None) means here, and the first problem
    that would stop ``jax.distributed.initialize()``; pure."""
    variables = {k: _cut(env[k]) for e in ORDER for k in (*e.detect, *e.reads) if k in env}
    variables |= {k: _cut(env[k]) for k in OVERRIDES if k in env}
    known = BY_CLASS.get(chosen or "")
    if chosen is not None and known is None:
        known = Environment(chosen, chosen, (), (), "its launcher")
    problem = _override_problem(env) or (
        _present_problem(known, env) if known else _absent_problem(env)
    )
    pid = count = None
    if problem is None and chosen in RANKS:
        rank, size = RANKS[chosen]
        pid, count = int(env[rank]), int(env[size])
    return Detection(known, problem, variables, pid, count)


def _present_problem(env_: Environment, env: Mapping[str, str]) -> str | None:
    missing = [k for k in env_.reads if not env.get(k, "").strip()]
    head = f"{env_.name} detected ({env_.jax_class}, by {', '.join(env_.detect) or 'JAX'})"
    if missing:
        return (
            f"{head}, but {_names(missing)} {'is' if len(missing) == 1 else 'are'} not set: "
            f"start every process with {env_.started_by}."
        )
    for k in env_.reads:
        if not _WHOLE.fullmatch(env[k].strip()):
            return f"{head}, but {k}={_cut(env[k], 20)!r} is not a whole number."
    if env_.jax_class in RANKS:
        rank, size = (int(env[k]) for k in RANKS[env_.jax_class])
        if not 0 <= rank < size:
            return (
                f"{head}, but its process id {rank} is not below its process count {size} "
                f"({' and '.join(RANKS[env_.jax_class])})."
            )
    uri = env.get("OMPI_MCA_orte_hnp_uri", "")
    if env_ is OMPI and not re.search(r"tcp://(.+?)[,:]|tcp6://\[(.+?)[,\]]", uri):
        return (
            f"{head}, but no launcher address can be read from OMPI_MCA_orte_hnp_uri="
            f"{_cut(uri, 60)!r} (JAX expects '...;tcp://HOST:PORT')."
        )
    return None


def _absent_problem(env: Mapping[str, str]) -> str:
    slurm = [k for k in SLURM.detect if k in env]
    if slurm:
        lacking = [k for k in SLURM.detect if k not in env]
        return (
            f"Slurm partly detected ({_names(slurm)} set), but {_names(lacking)} "
            f"{'is' if len(lacking) == 1 else 'are'} not: JAX's Slurm detection needs all "
            f"five; start every process with {SLURM.started_by}."
        )
    if any(k in env for k in OMPI.reads):
        return (
            "Open MPI partly detected (OMPI_COMM_WORLD_* set), but OMPI_MCA_orte_hnp_uri is "
            "not: JAX 0.10 detects Open MPI only by it, which Open MPI 4's mpirun sets and "
            "Open MPI 5 (PRRTE) does not; launch with srun, or with Open MPI 4."
        )
    if any(k in env for k in (*GKE_TPU.detect, *GKE_TPU.reads)):
        return (
            "TPU variables are set, but this is not a Cloud TPU VM that JAX recognises "
            "(GkeTpuCluster needs a TPU VM and TPU_WORKER_HOSTNAMES or "
            "TPU_PROCESS_ADDRESSES)."
        )
    if "KUBERNETES_SERVICE_HOST" in env:
        return (
            "Kubernetes partly detected (KUBERNETES_SERVICE_HOST set), but JAX's K8sCluster "
            "needs the kubernetes package: pip install 'jax[k8s]'."
        )
    if env.get("JAX_COORDINATOR_ADDRESS"):
        return (
            "JAX_COORDINATOR_ADDRESS is set, but no cluster environment gives the number of "
            "processes and this process's id: start every process with srun, mpirun, or "
            "on every host of a TPU slice."
        )
    return (
        "no cluster environment detected: JAX looks for Open MPI (OMPI_MCA_orte_hnp_uri), "
        "Slurm (SLURM_JOB_ID, SLURM_STEP_NODELIST, SLURM_NTASKS, SLURM_PROCID, "
        "SLURM_LOCALID), a TPU slice (a Cloud TPU VM's metadata, or TPU_WORKER_HOSTNAMES) "
        "and Kubernetes, in that order. Start every process with srun, mpirun, or "
        "gcloud ... --worker=all."
    )


def _override_problem(env: Mapping[str, str]) -> str | None:
    bind = env.get("JAX_COORDINATOR_BIND_ADDRESS")
    if bind is not None and not _HOST_PORT.fullmatch(bind.strip()):
        return (
            f"JAX_COORDINATOR_BIND_ADDRESS={_cut(bind, 60)!r} needs a host and a port, e.g. "
            "127.0.0.1:61586 (with the host alone the coordinator never answers)."
        )
    port = env.get("JAX_COORDINATOR_PORT")
    if port is not None and not (_WHOLE.fullmatch(port.strip()) and 0 < int(port) < 65536):
        return f"JAX_COORDINATOR_PORT={_cut(port, 20)!r} is not a port number (1 to 65535)."
    ids = env.get("JAX_LOCAL_DEVICE_IDS")
    if ids and not re.fullmatch(r"\s*[0-9]{1,6}\s*(,\s*[0-9]{1,6}\s*){0,1023}", ids):
        return (
            f"JAX_LOCAL_DEVICE_IDS={_cut(ids, 40)!r} is not a comma-separated list of "
            "device numbers, e.g. 0,1,2,3."
        )
    return None


def _names(keys: list[str]) -> str:
    return ", ".join(keys[:-1]) + (" and " if len(keys) > 1 else "") + keys[-1]


def _cut(text: str, limit: int = MAX_VALUE) -> str:
    s = "".join(ch if ch.isprintable() else "?" for ch in str(text))
    return s if len(s) <= limit else s[:limit] + "..."
