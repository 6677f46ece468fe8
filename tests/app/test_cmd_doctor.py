"""python -m pmapviz doctor: its report's verdict is the exit status, and it runs commands in
this process through the ``here`` it is given."""

import argparse

from pmapviz.app import cmd_doctor, doctorcommands, doctorreport
from pmapviz.app.ui import page_check


def test_the_verdict_is_the_exit_status_and_here_is_passed_through(monkeypatch, capsys):
    seen = {}

    def fake_run(settings, progress=None, pages=None, here=None):
        seen["here"] = here
        return {"ok": seen.get("ok", True)}

    monkeypatch.setattr(doctorreport, "run", fake_run)
    monkeypatch.setattr(doctorreport, "report_lines", lambda report: ["pmapviz doctor: fake"])
    args = argparse.Namespace(
        json=False,
        devices=None,
        platform=None,
        max_bytes=None,
        max_device_bytes=None,
        max_seconds=None,
        run_here=(marker := object()),
    )
    assert cmd_doctor.cmd_doctor(args) == 0 and seen["here"] is marker
    seen["ok"] = False
    assert cmd_doctor.cmd_doctor(args) == 1
    assert "pmapviz doctor: fake" in capsys.readouterr().out


def test_the_pages_are_checked_wherever_the_package_is_installed(monkeypatch, tmp_path):
    """The pages ship in the package: with no checkout beside it (a wheel in site-packages),
    the doctor still checks them; only a missing Streamlit says why they are not."""
    monkeypatch.setattr(doctorcommands, "ROOT", tmp_path)  # site-packages: no app.py beside it
    assert cmd_doctor._pages() is page_check.section
    monkeypatch.setattr(page_check, "available", lambda: False)
    assert cmd_doctor._pages() == doctorcommands.NO_STREAMLIT
    assert doctorreport._page_lines(doctorcommands.NO_STREAMLIT) == [
        f"pages: {doctorcommands.NO_STREAMLIT}"
    ]
