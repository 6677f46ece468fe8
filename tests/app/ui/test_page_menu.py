"""The page list drawn: the sidebar's menu on every page and Home's two columns of links, both
from the registry."""

from pmapviz.app.page_registry import PAGES
from pmapviz.core.base.pageinfo import page_file
from tests.pages.conftest import open_link


def test_the_sidebar_menu_lists_every_page_in_registry_order(run_app):
    at = run_app(page=page_file("tour"))
    menu = [link.proto.label for link in at.sidebar.get("page_link")]
    assert menu == [p.title for p in PAGES]


def test_home_links_every_other_page_with_its_line(run_app):
    at = run_app()
    main = [link.proto.label for link in at.main.get("page_link")]
    assert sorted(main) == sorted(p.title for p in PAGES[1:])  # two columns: every other one
    captions = [c.value for c in at.caption]
    assert all(p.blurb in captions for p in PAGES[1:])


def test_presenting_a_bar_in_the_first_screen_reaches_every_page_the_link_and_the_way_out(
    monkeypatch,
):
    """Presenter mode folds the sidebar away and hides Streamlit's header: the bar at the top
    of the main area is how a presenter moves on, shares and leaves, without typing a URL."""
    at = open_link(monkeypatch, page_file("tour"), {"step": "4", "present": "1"})
    labels = _popovers(at.main)
    assert labels[:2] == ["Pages", "Share this view"]
    links = [link.proto.label for link in at.main.get("page_link")]
    assert all(p.title in links for p in PAGES)
    at.button(key="presenter_leave").click().run()
    assert not at.session_state["present"] and "present" not in at.query_params
    assert "Pages" not in _popovers(at.main)


def test_not_presenting_there_is_no_bar(run_app):
    at = run_app(page=page_file("tour"))
    assert "presenter_leave" not in [b.key for b in at.button]


def _popovers(block) -> list[str]:
    """The labels of the popovers in ``block``, in order, however deep."""
    found = []
    for child in getattr(block, "children", {}).values():
        if getattr(child, "type", None) == "popover":
            found.append(child.proto.popover.label)
        found += _popovers(child)
    return found
