"""Connection strings, including UseDevelopmentStorage=true and host-style
endpoints, each checked with live calls."""
import base64
from datetime import datetime, timedelta, timezone

import pytest
from azure.core.exceptions import ClientAuthenticationError, ServiceRequestError
from azure.data.tables import (
    AccountSasPermissions,
    ResourceTypes,
    TableClient,
    TableServiceClient,
    generate_account_sas,
)

from conftest import (
    ACCOUNT,
    CONN_STR,
    CRED,
    ENDPOINT,
    KEY,
    NO_RETRY,
    TLS_BASE,
    TLS_CA,
    expect_error,
    redirect_transport,
    unique_name,
)


def _roundtrip(svc):
    """Creates a table, writes and reads an entity, lists and deletes the
    table through svc; asserts the results."""
    name = unique_name("conn")
    t = svc.create_table(name)
    assert t.table_name == name
    t.create_entity({"PartitionKey": "p", "RowKey": "r", "n": 7})
    got = t.get_entity("p", "r")
    assert got["n"] == 7
    names = [x.name for x in svc.query_tables(f"TableName eq '{name}'")]
    assert names == [name]
    svc.delete_table(name)
    assert [x.name for x in svc.query_tables(f"TableName eq '{name}'")] == []


def test_connection_string_with_table_endpoint():
    with TableServiceClient.from_connection_string(CONN_STR, **NO_RETRY) as svc:
        assert svc.account_name == ACCOUNT
        assert svc.url.rstrip("/") == ENDPOINT
        _roundtrip(svc)


def test_table_client_from_connection_string():
    name = unique_name("conn")
    with TableClient.from_connection_string(CONN_STR, table_name=name, **NO_RETRY) as t:
        t.create_table()
        t.upsert_entity({"PartitionKey": "a", "RowKey": "b", "s": "x"})
        assert t.get_entity("a", "b")["s"] == "x"
        t.delete_table()


def test_use_development_storage_true():
    # The SDK expands the shortcut to the emulator's well-known account on
    # http://127.0.0.1:10002. That port is not ours to take on a shared
    # machine (it may be another partita or an Azurite), so the client's
    # connections go to the test server, with the Host header and the
    # signed request exactly as the SDK built them for 127.0.0.1:10002.
    for conn in ("UseDevelopmentStorage=true", "usedevelopmentstorage=TRUE"):
        transport, adapter = redirect_transport(["127.0.0.1:10002"])
        svc = TableServiceClient.from_connection_string(conn, transport=transport, **NO_RETRY)
        assert svc.url.rstrip("/") == "http://127.0.0.1:10002/devstoreaccount1"
        assert svc.account_name == ACCOUNT
        assert svc.credential.named_key.name == ACCOUNT
        assert svc.credential.named_key.key == KEY
        _roundtrip(svc)
        assert adapter.seen, "no request went through the development-storage endpoint"
        assert all(u.startswith("http://127.0.0.1:10002/devstoreaccount1") for _, u in adapter.seen), adapter.seen


def test_host_style_connection_string():
    # AccountName + EndpointSuffix (no TableEndpoint): the SDK addresses
    # the account by host name, devstoreaccount1.table.core.windows.net.
    conn = (
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};"
        "EndpointSuffix=core.windows.net"
    )
    host = f"{ACCOUNT}.table.core.windows.net"
    transport, adapter = redirect_transport([host])
    with TableServiceClient.from_connection_string(conn, transport=transport, **NO_RETRY) as svc:
        assert svc.url.rstrip("/") == f"http://{host}"
        _roundtrip(svc)
    assert adapter.seen and all(u.startswith(f"http://{host}/") for _, u in adapter.seen)


def test_sas_connection_string():
    sas = generate_account_sas(
        CRED,
        resource_types=ResourceTypes(service=True, object=True, container=True),
        permission=AccountSasPermissions(read=True, write=True, delete=True, list=True, add=True, update=True),
        expiry=datetime.now(timezone.utc) + timedelta(hours=1),
    )
    conn = f"TableEndpoint={ENDPOINT};SharedAccessSignature={sas}"
    with TableServiceClient.from_connection_string(conn, **NO_RETRY) as svc:
        _roundtrip(svc)


def test_wrong_key_is_authentication_failed():
    bad = base64.b64encode(b"not the account key, 32 bytes!!!" * 2).decode()
    conn = f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={bad};TableEndpoint={ENDPOINT};"
    with TableServiceClient.from_connection_string(conn, **NO_RETRY) as svc:
        expect_error(ClientAuthenticationError, 403, "AuthenticationFailed", lambda: list(svc.list_tables()))


def test_https_endpoint():
    conn = (
        f"DefaultEndpointsProtocol=https;AccountName={ACCOUNT};AccountKey={KEY};"
        f"TableEndpoint={TLS_BASE}/{ACCOUNT};"
    )
    with TableServiceClient.from_connection_string(conn, connection_verify=TLS_CA, **NO_RETRY) as svc:
        assert svc.scheme == "https"
        _roundtrip(svc)
    # Without the test CA the certificate is not trusted: the request
    # fails in the TLS handshake, not with an answer.
    with TableServiceClient.from_connection_string(conn, **NO_RETRY) as svc:
        with pytest.raises(ServiceRequestError, match="CERTIFICATE_VERIFY_FAILED"):
            list(svc.list_tables())


def test_table_client_from_table_url():
    name = unique_name("url")
    with TableClient.from_table_url(f"{ENDPOINT}/{name}", credential=CRED, **NO_RETRY) as t:
        assert t.table_name == name and t.account_name == ACCOUNT
        t.create_table()
        t.create_entity({"PartitionKey": "p", "RowKey": "r"})
        assert [e["RowKey"] for e in t.list_entities()] == ["r"]
        t.delete_table()
