"""Launch lines from the user's numbers (and the link), bad numbers said without a traceback,
and what changes on a real cluster."""

from tests.core.ui.conftest import render, texts


def _lines():
    from pmapviz.core.ui import url_state
    from pmapviz.features.cluster import clustersettings
    from pmapviz.features.cluster.ui import cluster_lines

    url_state.load("cl_", clustersettings.schema())
    cluster_lines.show()
    cluster_lines.explain()


def test_the_links_numbers_make_the_lines():
    at = render(_lines, query={"nodes": "2", "ppn": "4", "dpp": "1", "kind": "gpu"})
    assert not at.exception
    codes = [c.value for c in at.code]
    assert codes[0] == (
        "srun -N 2 --ntasks-per-node 4 --gpus-per-node 4 python -m pmapviz "
        "cluster --join --report cluster-report.json"
    )
    assert codes[1].startswith("mpirun -np 8 --map-by ppr:4:node --hostfile hosts.txt")
    assert "--worker=all" in codes[2] and codes[3].startswith("mpirun -np 4 ")
    assert "local_device_ids=[local rank]" in texts(at)


def test_cpu_devices_and_changed_numbers():
    at = render(_lines)
    at.text_input(key="cl_nodes").input("3").run()
    at.selectbox(key="cl_kind").set_value("cpu").run()
    assert at.code[0].value.startswith("srun -N 3 --ntasks-per-node 4 python -m pmapviz")
    assert at.code[0].value.endswith("--local-devices 1")


def test_bad_numbers_are_said_and_nothing_is_drawn():
    at = render(_lines)
    at.text_input(key="cl_ppn").input("4²").run()
    assert not at.exception and not at.code
    assert "Processes per node `4²` is not a whole number" in at.error[0].value
    at.text_input(key="cl_ppn").input("99999").run()
    assert "nearest valid: 64" in at.error[0].value
