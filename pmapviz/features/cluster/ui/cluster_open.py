"""Open a real cluster's report (``python -m pmapviz cluster --join --report PATH``): an
upload, or a path inside the reports folder named at start-up (``--reports DIR`` /
``PMAPVIZ_REPORTS``; a path leading outside it is refused). The path is a page setting
(``cl_report``, in the link); the file is read by :mod:`pmapviz.features.cluster.clusterreport`,
which
says in one message what is wrong with a file that is not a report."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base.valuetext import quote
from pmapviz.core.devices import jaxstartup
from pmapviz.core.ui import url_state
from pmapviz.features.cluster import clusterreport, clustersettings

P = "cl_"


def show() -> tuple[clusterreport.ClusterReport | None, str]:
    """The widgets; (the report, where it came from), or (None, "") when none is open or it
    could not be read (said on the page)."""
    folder = jaxstartup.applied_settings().reports
    c1, c2 = st.columns(2)
    upload = c1.file_uploader(
        "Upload a report (JSON)",
        type=["json"],
        key="cl_upload",
        help="The file that process 0 wrote with --report PATH.",
    )
    c2.text_input(
        "Or a path inside the reports folder",
        key=P + "report",
        max_chars=clusterreport.MAX_NAME,
        disabled=folder is None,
        placeholder="cluster-report.json",
    )
    c2.caption(folder_note(folder))
    try:
        if upload is not None:
            if upload.size > clusterreport.MAX_BYTES:
                raise clusterreport.ReportError(
                    f"The upload is {upload.size:,} bytes; a report is at most "
                    f"{clusterreport.MAX_BYTES // 2**20} MiB."
                )
            return clusterreport.parse(upload.getvalue()), f"the upload {quote(upload.name, 60)}"
        values, errors = clustersettings.schema().parse(
            {"report": st.session_state.get(P + "report", "")}, ["report"]
        )
        if url_state.show_errors(errors):
            return None, ""
        if folder is not None and values["report"].strip():
            name = values["report"].strip()
            return clusterreport.read(folder, name), f"{quote(name, 60)} in the reports folder"
    except clusterreport.ReportError as err:
        st.error(f"**This report cannot be shown**: {err}", icon=":material/block:")
    return None, ""


def folder_note(folder: str | None) -> str:
    """Where paths are read from, and the reports found there."""
    if folder is None:
        return (
            "No reports folder was named at start-up: start the server with "
            "`--reports DIR` (or `PMAPVIZ_REPORTS=DIR`) to open reports by path."
        )
    found = clusterreport.listing(folder, 12)
    return f"Reports folder {quote(folder, 80)}: " + (
        ", ".join(quote(n, 60) for n in found) if found else "no .json files yet."
    )
