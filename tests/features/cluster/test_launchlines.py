"""The launch lines: each launcher's command from the user's numbers, the devices each
process gets, and the per-process device range computed by bash as written."""

from __future__ import annotations

import os
import shlex
import subprocess

import pytest

from pmapviz.app import cli
from pmapviz.features.cluster import launchlines

JOIN = "python -m pmapviz cluster --join --report cluster-report.json"


def test_slurm_one_process_per_gpu_uses_jaxs_default():
    launch = launchlines.slurm(2, 4, 1, "gpu")
    assert launch.command == f"srun -N 2 --ntasks-per-node 4 --gpus-per-node 4 {JOIN}"
    assert "8 processes (2 nodes x 4), each with 1 local GPU: 8 global devices" in launch.explains
    assert "GPU number SLURM_LOCALID" in launch.explains


def test_one_process_per_node_with_several_gpus_sets_the_ids():
    assert launchlines.slurm(4, 1, 8, "gpu").command == (
        f"JAX_LOCAL_DEVICE_IDS=0,1,2,3,4,5,6,7 srun -N 4 --ntasks-per-node 1 --gpus-per-node 8 "
        f"{JOIN}"
    )
    assert launchlines.openmpi(4, 1, 8, "gpu").command == (
        "mpirun -np 4 --map-by ppr:1:node --hostfile hosts.txt -x "
        f"JAX_LOCAL_DEVICE_IDS=0,1,2,3,4,5,6,7 {JOIN}"
    )


def test_cpu_devices_are_asked_for_by_each_process():
    launch = launchlines.slurm(2, 2, 2, "cpu")
    assert launch.command == f"srun -N 2 --ntasks-per-node 2 {JOIN} --local-devices 2"
    assert "8 global devices" in launch.explains
    argv = shlex.split(launch.command)  # what every process runs, as the CLI parses it
    args = cli.build_parser().parse_args(argv[argv.index("pmapviz") + 1 :])
    assert args.join and args.local_devices == "2" and args.report == "cluster-report.json"


@pytest.mark.parametrize(
    ("rank_var", "rank", "devices", "ids"),
    [
        ("SLURM_LOCALID", "0", 2, "0,1"),
        ("SLURM_LOCALID", "1", 2, "2,3"),
        ("OMPI_COMM_WORLD_LOCAL_RANK", "3", 2, "6,7"),
        ("SLURM_LOCALID", "1", 4, "4,5,6,7"),
    ],
)
def test_each_process_computes_its_own_gpus_in_bash(rank_var, rank, devices, ids):
    line = launchlines.device_ids(rank_var, devices, "printenv JAX_LOCAL_DEVICE_IDS")
    out = subprocess.run(
        line,
        shell=True,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": os.environ["PATH"], rank_var: rank},
    )
    assert out.stdout.strip() == ids


def test_several_processes_of_several_gpus_get_the_wrapper():
    cmd = launchlines.slurm(2, 2, 4, "gpu").command
    assert cmd.startswith("srun -N 2 --ntasks-per-node 2 --gpus-per-node 8 bash -c '")
    assert "$((SLURM_LOCALID*4)) $((SLURM_LOCALID*4+3))" in cmd and cmd.endswith(f"exec {JOIN}'")


def test_open_mpi_tpu_and_one_gpu_host():
    assert launchlines.openmpi(2, 4, 1, "gpu").command == (
        f"mpirun -np 8 --map-by ppr:4:node --hostfile hosts.txt {JOIN}"
    )
    tpu = launchlines.tpu_pod(4)
    assert "--worker=all" in tpu.command and JOIN in tpu.command
    assert "each of the slice's 4 hosts" in tpu.explains
    host = launchlines.gpu_host(8, 1)
    assert host.command == f"mpirun -np 8 {JOIN}" and host.title == "A multi-GPU host"
    launches = launchlines.all_launches(2, 4, 1, "gpu")
    assert [x.title for x in launches] == ["Slurm", "Open MPI", "TPU pod slice", "A multi-GPU host"]
    assert all(shlex.split(x.command) for x in launches)  # quotes balance
