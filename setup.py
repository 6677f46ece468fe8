"""The wheel's one addition to pyproject.toml: the checkout's top-level ``pages/`` ships as the
package ``pmapviz.app.ui.pages``, so an installed ``pmapviz serve`` serves the same page files as
``streamlit run app.py`` in a checkout (``pmapviz.core.base.pageinfo.PAGES_FOLDER`` finds either;
tests/test_packaging.py compares the wheel's pages with the checkout's byte for byte)."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["pmapviz*"]), "pmapviz.app.ui.pages"],
    package_dir={"pmapviz.app.ui.pages": "pages"},
)
