"""AppTest fixtures for the app's Streamlit parts: the page tests' own."""

from tests.pages.conftest import run_app  # noqa: F401  (the fixture)
