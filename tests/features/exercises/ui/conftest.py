"""AppTest fixtures for the exercises' Streamlit parts: the page tests' own."""

from tests.pages.conftest import run_app  # noqa: F401  (the fixture)
