"""The pages' AppTest fixture, for the Pods page's parts."""

from tests.pages.conftest import run_app  # noqa: F401  (a fixture, registered by this import)
