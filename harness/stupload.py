"""A Streamlit session over the browser's protocol that can also upload a file, as the
browser's ``st.file_uploader`` does (Streamlit 1.67):

1. ask the server for an upload URL: a ``file_urls_request`` BackMsg; the server answers with
   a ``file_urls_response`` ForwardMsg (a file id, and ``/_stcore/upload_file/<session>/<id>``);
2. PUT the file there as multipart form data (one part), with the XSRF cookie the server set
   on ``/_stcore/health`` and the same token in an ``X-Xsrftoken`` header
   (``server.enableXsrfProtection`` is on in .streamlit/config.toml);
3. rerun the script with the uploader's widget state: a ``FileUploaderState`` naming the
   file (its id, name, size and URLs).

Everything else is ``harness.stclient.Session``; alerts are also kept with their format
(error, warning, info, success) in ``UploadPage.alerts``.
"""

from __future__ import annotations

import time
import urllib.request
import uuid
from dataclasses import dataclass, field

from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from harness.stclient import Page, Session

XSRF_COOKIE = "_streamlit_xsrf"
ALERT_FORMATS = {Alert.ERROR: "error", Alert.WARNING: "warning", Alert.INFO: "info",
                 Alert.SUCCESS: "success"}  # fmt: skip


@dataclass
class UploadPage(Page):
    alerts: list[tuple[str, str]] = field(default_factory=list)  # (format, text)


def xsrf_token(base_url: str) -> str:
    """The XSRF cookie's value the server sets on its health check ('' when it sets none)."""
    with urllib.request.urlopen(base_url + "/_stcore/health", timeout=30) as r:
        for header in r.headers.get_all("Set-Cookie") or []:
            name, _, rest = header.partition("=")
            if name.strip() == XSRF_COOKIE:
                return rest.split(";")[0].strip()
    return ""


def put_file(base_url: str, upload_url: str, name: str, data: bytes, timeout: float) -> int:
    """PUT ``data`` as the browser does (multipart, one part named "file"); the HTTP status."""
    boundary = uuid.uuid4().hex
    head = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="{name}"\r\nContent-Type: application/octet-stream\r\n\r\n')  # fmt: skip
    body = head.encode() + data + f"\r\n--{boundary}--\r\n".encode()
    token = xsrf_token(base_url)
    req = urllib.request.Request(base_url + upload_url, data=body, method="PUT", headers={
        "Content-Type": f"multipart/form-data; boundary={boundary}",
        **({"X-Xsrftoken": token, "Cookie": f"{XSRF_COOKIE}={token}"} if token else {}),
    })  # fmt: skip
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status


class UploadSession(Session):
    """``Session`` plus ``upload(label_prefix, name, data)``: the file uploader whose label
    starts with ``label_prefix`` (in the last run) gets the file, and the script reruns with
    it; returns that run's page."""

    def __init__(self, base_url: str, timeout: float = 600.0):
        super().__init__(base_url, timeout)
        self.base_url = base_url
        self.uploaders: dict[str, str] = {}  # label -> widget id, from the last run

    def upload(self, label_prefix: str, name: str, data: bytes, on_element=None) -> UploadPage:
        wid = next(w for label, w in self.uploaders.items() if label.startswith(label_prefix))
        request_id = uuid.uuid4().hex
        msg = BackMsg()
        msg.file_urls_request.request_id = request_id
        msg.file_urls_request.file_names.append(name)
        self._ws.send(msg.SerializeToString())
        urls = self._file_urls(request_id)
        status = put_file(self.base_url, urls.upload_url, name, data, self.timeout)
        if status not in (200, 204):
            raise RuntimeError(f"the upload answered HTTP {status}")
        state = WidgetState(id=wid)
        info = state.file_uploader_state_value.uploaded_file_info.add()
        info.name, info.size, info.file_id = name, len(data), urls.file_id
        info.file_urls.CopyFrom(urls)
        return self._run([], on_element, [state])

    def _file_urls(self, request_id: str):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            fwd = ForwardMsg()
            fwd.ParseFromString(self._ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if (fwd.WhichOneof("type") == "file_urls_response"
                    and fwd.file_urls_response.response_id == request_id):  # fmt: skip
                if fwd.file_urls_response.error_msg:
                    raise RuntimeError(fwd.file_urls_response.error_msg)
                return fwd.file_urls_response.file_urls[0]
        raise TimeoutError("no file_urls_response within 60 s")

    def _new_page(self) -> UploadPage:
        self.uploaders = {}
        return UploadPage()

    def _seen(self, el, kind: str, text: str, page: UploadPage) -> None:
        """Buttons as the base session keeps them, and the uploaders and alerts (their format)."""
        super()._seen(el, kind, text, page)
        if kind == "file_uploader":
            self.uploaders[el.file_uploader.label] = el.file_uploader.id
        elif kind == "alert":
            page.alerts.append((ALERT_FORMATS.get(el.alert.format, "?"), text))
