"""One ui component at a time, in AppTest: ``render(script, *args, query=..., state=...)``
runs ``script(*args)`` (a function that imports what it draws) as a Streamlit script."""

from streamlit.testing.v1 import AppTest


def render(
    script, *args, query: dict | None = None, state: dict | None = None, timeout: float = 120
) -> AppTest:
    at = AppTest.from_function(script, args=args, default_timeout=timeout)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    for k, v in (state or {}).items():
        at.session_state[k] = v
    return at.run()


# every AppTest element kind that shows text to the reader
TEXT_KINDS = (
    "markdown",
    "caption",
    "error",
    "warning",
    "info",
    "success",
    "title",
    "subheader",
    "header",
    "code",
)


def texts(at: AppTest) -> str:
    """Every text element's value, one per line."""
    return "\n".join(str(e.value) for kind in TEXT_KINDS for e in getattr(at, kind))
