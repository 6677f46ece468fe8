"""A cluster's settings and launch: from the link, back to it, and a failure explained."""

from tests.core.ui.conftest import render


def _launch():
    import streamlit as st

    from pmapviz.features.cluster.ui import cluster_launch

    crash = cluster_launch.form()
    procs, local = cluster_launch.sizes()
    st.markdown(f"{procs} x {local}, crash={crash}")
    cluster_launch.show(procs, local, crash)
    cluster_launch.save()


def test_the_links_sizes_become_the_launch_and_the_crash_box_stays_out_of_the_link():
    at = render(_launch, query={"p": "3", "d": "1"})
    assert not at.exception
    assert at.markdown[0].value == "3 x 1, crash=False"
    assert at.button(key="cl_go").label == "Launch 3 processes x 1 devices"
    at.checkbox(key="cl_crash").check().run()
    assert at.markdown[0].value == "3 x 1, crash=True"
    assert dict(at.query_params) == {
        "p": "3",
        "d": "1",
        "report": "",
        "nodes": "2",
        "ppn": "4",
        "dpp": "1",
        "kind": "gpu",
    }  # the whole page's settings


def test_a_failed_launch_says_what_each_worker_printed_last():
    at = render(_launch, state={"cl_error": ("worker 1 died", {1: ["a", "b"], 0: []})})
    assert "**The cluster failed**: worker 1 died" in at.error[0].value
    assert [c.value for c in at.code[-2:]] == ["process 1:\na\nb", "process 0:\n(no output)"]
