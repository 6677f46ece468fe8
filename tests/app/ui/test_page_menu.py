"""The page list drawn: the sidebar's menu on every page and Home's two columns of links, both
from the registry."""

from pmapviz.app.page_registry import PAGES
from pmapviz.core.base.pageinfo import page_file


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
