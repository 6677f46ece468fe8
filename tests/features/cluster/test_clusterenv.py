"""Which cluster JAX detects, by JAX's own classes, and the one thing missing when it cannot
join: the names checked against JAX 0.10.2's ``jax/_src/clusters``."""

from __future__ import annotations

import pytest
from jax._src import clusters
from jax._src.clusters import ompi_cluster, slurm_cluster

from pmapviz.features.cluster import clusterenv
from pmapviz.features.cluster.clusterenv import OMPI, SLURM

ALL = tuple(k for e in clusterenv.ORDER for k in (*e.detect, *e.reads)) + clusterenv.OVERRIDES
SLURM_OK = {
    "SLURM_JOB_ID": "4242",
    "SLURM_STEP_NODELIST": "localhost",
    "SLURM_NTASKS": "2",
    "SLURM_PROCID": "1",
    "SLURM_LOCALID": "1",
}
OMPI_OK = {
    "OMPI_MCA_orte_hnp_uri": "4243.0;tcp://127.0.0.1:5000",
    "OMPI_COMM_WORLD_SIZE": "2",
    "OMPI_COMM_WORLD_RANK": "0",
    "OMPI_COMM_WORLD_LOCAL_RANK": "0",
}


@pytest.fixture()
def environ(monkeypatch):
    """Set exactly these cluster variables in os.environ (which JAX's classes read)."""
    for k in ALL:
        monkeypatch.delenv(k, raising=False)

    def _set(values: dict[str, str]) -> dict[str, str]:
        for k, v in values.items():
            monkeypatch.setenv(k, v)
        return values

    return _set


def test_the_names_are_jaxs_own():
    assert OMPI.detect == (ompi_cluster._ORTE_URI,)
    assert OMPI.reads == (
        ompi_cluster._PROCESS_COUNT,
        ompi_cluster._PROCESS_ID,
        ompi_cluster._LOCAL_PROCESS_ID,
    )
    assert SLURM.detect == (
        slurm_cluster._JOBID_PARAM,
        slurm_cluster._NODE_LIST,
        slurm_cluster._PROCESS_COUNT,
        slurm_cluster._PROCESS_ID,
        slurm_cluster._LOCAL_PROCESS_ID,
    )
    order = [
        c.__name__ for c in clusters.ClusterEnv._cluster_types if c.__name__ != "BaseTpuCluster"
    ]
    assert order[: len(clusterenv.ORDER)] == [e.jax_class for e in clusterenv.ORDER]
    assert [
        c.opt_in_only_method
        for c in clusters.ClusterEnv._cluster_types
        if c.__name__ == "Mpi4pyCluster"
    ] == [True]


def test_jax_picks_slurm_open_mpi_first_and_nothing_without_variables(environ):
    assert clusterenv.jax_choice() is None
    environ(SLURM_OK)
    assert clusterenv.jax_choice() == "SlurmCluster"
    environ(OMPI_OK)  # an mpirun inside a Slurm allocation: Open MPI wins
    assert clusterenv.jax_choice() == "OmpiCluster"


@pytest.mark.parametrize("missing", SLURM.detect)
def test_each_missing_slurm_variable_is_named(environ, missing):
    environ({k: v for k, v in SLURM_OK.items() if k != missing})
    assert not slurm_cluster.SlurmCluster.is_env_present()  # JAX needs all five
    found = clusterenv.detect()
    assert found.env is None and f"{missing} is not" in found.problem
    assert found.problem.startswith("Slurm partly detected")


def test_a_complete_slurm_environment_gives_process_and_coordinator(environ):
    environ({**SLURM_OK, "JAX_COORDINATOR_BIND_ADDRESS": "127.0.0.1:61586"})
    found = clusterenv.detect()
    assert found.problem is None
    assert (found.process_id, found.process_count) == (1, 2)
    assert found.coordinator == "localhost:61586"  # JAX: 4242 % 4096 + 61440
    assert found.describe() == (
        "Slurm detected (SlurmCluster): process 1 of 2, coordinator localhost:61586"
    )
    assert found.to_json()["variables"]["SLURM_PROCID"] == "1"


def test_open_mpi_coordinator_is_the_launchers_host_and_its_job_port(environ):
    environ(OMPI_OK)
    found = clusterenv.detect()
    assert found.problem is None and found.env is OMPI
    assert found.coordinator == "127.0.0.1:61441"  # JAX: 4243 // 4096 % 4096 + 61440
    environ({"JAX_COORDINATOR_PORT": "62000"})
    assert clusterenv.detect().coordinator == "127.0.0.1:62000"


@pytest.mark.parametrize("missing", OMPI.reads)
def test_open_mpi_detected_but_a_rank_variable_missing(missing):
    env = {k: v for k, v in OMPI_OK.items() if k != missing}
    found = clusterenv.diagnose(env, "OmpiCluster")
    assert found.problem == (
        f"Open MPI detected (OmpiCluster, by OMPI_MCA_orte_hnp_uri), but "
        f"{missing} is not set: start every process with mpirun or mpiexec "
        "(Open MPI 4)."
    )


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"SLURM_PROCID": "x1"}, "SLURM_PROCID='x1' is not a whole number"),
        ({"SLURM_PROCID": "²"}, "is not a whole number"),
        ({"SLURM_PROCID": "2"}, "process id 2 is not below its process count 2"),
        ({"JAX_COORDINATOR_BIND_ADDRESS": "127.0.0.1"}, "needs a host and a port"),
        ({"JAX_COORDINATOR_PORT": "99999"}, "is not a port number"),
        ({"JAX_LOCAL_DEVICE_IDS": "0;1"}, "is not a comma-separated list"),
    ],
)
def test_values_jax_would_choke_on_are_said_first(change, said):
    found = clusterenv.diagnose({**SLURM_OK, **change}, "SlurmCluster")
    assert said in found.problem


def test_an_unreadable_launcher_address_is_said():
    found = clusterenv.diagnose({**OMPI_OK, "OMPI_MCA_orte_hnp_uri": "4243.0;pmix"}, "OmpiCluster")
    assert "no launcher address can be read" in found.problem


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({}, "no cluster environment detected: JAX looks for Open MPI"),
        ({"OMPI_COMM_WORLD_RANK": "0"}, "Open MPI 5 (PRRTE) does not"),
        ({"TPU_WORKER_ID": "0"}, "not a Cloud TPU VM"),
        ({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, "pip install 'jax[k8s]'"),
        ({"JAX_COORDINATOR_ADDRESS": "10.0.0.1:1234"}, "no cluster environment gives the number"),
    ],
)
def test_nothing_detected_says_what_jax_looks_for(env, said):
    found = clusterenv.diagnose(env, None)
    assert found.env is None and said in found.problem
    assert found.describe() == "no cluster environment detected"


def test_a_bind_port_other_than_the_coordinators_is_refused():
    assert clusterenv.port_problem("localhost:61586", "127.0.0.1:61586") is None
    assert "listens on port 7000" in clusterenv.port_problem("localhost:61586", "127.0.0.1:7000")
    assert clusterenv.port_problem(None, "127.0.0.1:7000") is None


def test_only_named_variables_are_reported_and_values_are_cut():
    env = {**SLURM_OK, "SECRET_TOKEN": "x", "SLURM_STEP_NODELIST": "n" * 500}
    found = clusterenv.diagnose(env, "SlurmCluster")
    assert "SECRET_TOKEN" not in found.variables
    assert len(found.variables["SLURM_STEP_NODELIST"]) == clusterenv.MAX_VALUE + 3
