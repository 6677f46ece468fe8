"""python -m pmapviz doctor: its report's verdict is the exit status, and it runs commands in
this process through the ``here`` it is given."""

import argparse

from pmapviz.app import cmd_doctor, doctorcommands, doctorreport


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


def test_an_installed_package_says_why_its_pages_are_not_checked(monkeypatch, tmp_path):
    assert cmd_doctor._pages() is not doctorcommands.NO_PAGES  # a checkout: app.py is here
    monkeypatch.setattr(
        doctorcommands, "ROOT", tmp_path
    )  # site-packages: no app.py beside pmapviz/
    assert not doctorcommands.pages_here() and cmd_doctor._pages() == doctorcommands.NO_PAGES
    assert doctorreport._page_lines(doctorcommands.NO_PAGES) == [
        f"pages: {doctorcommands.NO_PAGES}"
    ]
