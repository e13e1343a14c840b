"""Shared setup for the azure-data-tables tests against partita.

Environment (set by e2e/python_test.go, which starts the real binary):
  PARTITA_URL     http://127.0.0.1:PORT of a running partita; the tests use
                  the path-style endpoint PARTITA_URL/devstoreaccount1.
  PARTITA_TLS_URL https://127.0.0.1:PORT of a partita serving HTTPS, and
  PARTITA_TLS_CA  the CA certificate (PEM) that signed its certificate.

Some tests need the SDK to talk to an address it derives itself (the
UseDevelopmentStorage=true shortcut, 127.0.0.1:10002; host-style
devstoreaccount1[-secondary].table.core.windows.net). Those clients get a
requests session whose adapter connects to partita instead, like an
/etc/hosts entry: the URL's host stays in the Host header and in everything
the SDK signs, only the TCP connection goes elsewhere.
"""
import os
import uuid
import urllib.parse
from xml.etree import ElementTree

import pytest
import requests
from azure.core.credentials import AzureNamedKeyCredential
from azure.core.exceptions import HttpResponseError
from azure.core.pipeline.transport import RequestsTransport
from azure.data.tables import TableClient, TableServiceClient

ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def _env(name, example):
    value = os.environ.get(name, "").rstrip("/")
    if not value:
        raise RuntimeError(f"{name} is not set ({example}); run through e2e/python_test.go")
    return value


BASE = _env("PARTITA_URL", "http://127.0.0.1:PORT")
TLS_BASE = _env("PARTITA_TLS_URL", "https://127.0.0.1:PORT")
TLS_CA = _env("PARTITA_TLS_CA", "a PEM file")
ENDPOINT = f"{BASE}/{ACCOUNT}"
CRED = AzureNamedKeyCredential(ACCOUNT, KEY)
CONN_STR = (
    f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};"
    f"TableEndpoint={ENDPOINT};"
)

# No retries: a failing request must surface at once, not after back-off.
NO_RETRY = {"retry_total": 0}


def unique_name(prefix="py"):
    return prefix + uuid.uuid4().hex[:16]


def service_client(**kw):
    return TableServiceClient(ENDPOINT, credential=CRED, **NO_RETRY, **kw)


def table_client(name, **kw):
    return TableClient(ENDPOINT, name, credential=CRED, **NO_RETRY, **kw)


@pytest.fixture
def svc():
    with service_client() as c:
        yield c


@pytest.fixture
def table():
    """A fresh table, deleted after the test."""
    name = unique_name()
    c = table_client(name)
    c.create_table()
    yield c
    try:
        c.delete_table()
    finally:
        c.close()


def error_code(err):
    """The service error code of an SDK exception.

    Most operations raise a decoded error with .error_code; some
    (create_entity, for one) re-raise azure-core's error as it is, so the
    code is read from the x-ms-error-code header and the error body (JSON
    odata.error or XML), which must agree.
    """
    code = getattr(err, "error_code", None)
    if code is not None:
        return str(getattr(code, "value", code))
    resp = err.response
    header = resp.headers.get("x-ms-error-code")
    if "xml" in resp.headers.get("Content-Type", ""):
        root = ElementTree.fromstring(resp.text())
        body = next((el.text for el in root.iter() if el.tag.rsplit("}", 1)[-1].lower() == "code"), None)
    else:
        body = resp.json()["odata.error"]["code"]
    assert header == body, f"x-ms-error-code {header!r} != error body code {body!r}"
    return body


def expect_error(exc_type, status, code, fn, *args, **kwargs):
    """Calls fn and asserts it raises exc_type with the status and code."""
    with pytest.raises(exc_type) as info:
        fn(*args, **kwargs)
    err = info.value
    assert isinstance(err, HttpResponseError)
    assert err.status_code == status, f"status {err.status_code}: {err}"
    assert error_code(err) == code, f"code {error_code(err)!r}: {err}"
    return err


class _RedirectAdapter(requests.adapters.HTTPAdapter):
    """Connects to a fixed address per URL host, keeping the Host header."""

    def __init__(self, hosts):
        super().__init__(max_retries=0)
        self.hosts = dict(hosts)
        self.seen = []

    def send(self, request, **kwargs):
        parts = urllib.parse.urlsplit(request.url)
        target = self.hosts.get(parts.netloc)
        if target is None:
            raise AssertionError(f"the SDK sent a request to an unexpected host: {request.url}")
        self.seen.append((request.method, request.url))
        request.headers["Host"] = parts.netloc
        request.url = urllib.parse.urlunsplit(parts._replace(netloc=target))
        return super().send(request, **kwargs)


def redirect_transport(hosts):
    """A transport that sends requests for each host in hosts (host[:port]
    as it appears in the URL) to partita. Returns (transport, adapter)."""
    target = urllib.parse.urlsplit(BASE).netloc
    adapter = _RedirectAdapter({h: target for h in hosts})
    session = requests.Session()
    session.trust_env = False
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return RequestsTransport(session=session, session_owner=False, use_env_settings=False), adapter
