"""Table and account shared access signatures made by the SDK, with their
PartitionKey/RowKey ranges, permissions, resource types and stored
access policies enforced."""
from datetime import datetime, timedelta, timezone

import pytest
from azure.core.credentials import AzureSasCredential
from azure.core.exceptions import HttpResponseError
from azure.data.tables import (
    AccountSasPermissions,
    ResourceTypes,
    TableAccessPolicy,
    TableClient,
    TableSasPermissions,
    TableServiceClient,
    generate_account_sas,
    generate_table_sas,
)

from conftest import CRED, ENDPOINT, NO_RETRY, error_code, unique_name

KEYS = [("a", "1"), ("b", "1"), ("b", "2"), ("c", "9"), ("d", "5"), ("d", "6"), ("e", "0")]
IN_RANGE = [("b", "2"), ("c", "9"), ("d", "5")]  # spk=b srk=2 .. epk=d erk=5


def _hour():
    return datetime.now(timezone.utc) + timedelta(hours=1)


def _sas_table(name, sas):
    return TableClient(ENDPOINT, name, credential=AzureSasCredential(sas), **NO_RETRY)


def _denied(fn, *args, **kwargs):
    """Asserts fn is refused with 403 and returns the error code."""
    with pytest.raises(HttpResponseError) as info:
        fn(*args, **kwargs)
    assert info.value.status_code == 403, info.value
    return error_code(info.value)


@pytest.fixture
def filled(table):
    for pk, rk in KEYS:
        table.create_entity({"PartitionKey": pk, "RowKey": rk, "v": pk + rk})
    return table


def test_table_sas_key_range_enforced(filled):
    sas = generate_table_sas(CRED, filled.table_name, permission=TableSasPermissions(read=True, add=True, update=True, delete=True),
                             expiry=_hour(), start_pk="b", start_rk="2", end_pk="d", end_rk="5")
    assert "spk=b" in sas and "srk=2" in sas and "epk=d" in sas and "erk=5" in sas
    with _sas_table(filled.table_name, sas) as t:
        # Queries are clipped to the range.
        assert [(e["PartitionKey"], e["RowKey"]) for e in t.list_entities()] == IN_RANGE
        assert [e["v"] for e in t.query_entities("v ne @x", parameters={"x": "zz"})] == ["b2", "c9", "d5"]
        # Point reads and writes inside the range work...
        assert t.get_entity("c", "9")["v"] == "c9"
        t.create_entity({"PartitionKey": "c", "RowKey": "new"})
        t.upsert_entity({"PartitionKey": "d", "RowKey": "4", "v": "x"})
        t.delete_entity("c", "new")
        # ...and outside it they are refused.
        for pk, rk in (("a", "1"), ("b", "1"), ("d", "6"), ("e", "0")):
            assert _denied(t.get_entity, pk, rk) == "AuthorizationFailure"
        assert _denied(t.create_entity, {"PartitionKey": "e", "RowKey": "1"}) == "AuthorizationFailure"
        assert _denied(t.upsert_entity, {"PartitionKey": "b", "RowKey": "1", "v": "changed"}) == "AuthorizationFailure"
        # A batch with one operation out of range is refused whole.
        assert _denied(t.submit_transaction, [("upsert", {"PartitionKey": "d", "RowKey": "3"}),
                                              ("upsert", {"PartitionKey": "d", "RowKey": "7"})]) == "AuthorizationFailure"
    assert filled.get_entity("b", "1")["v"] == "b1"
    assert [e["RowKey"] for e in filled.query_entities("PartitionKey eq 'd'")] == ["4", "5", "6"]


def test_table_sas_permissions(filled):
    ro = generate_table_sas(CRED, filled.table_name, permission=TableSasPermissions(read=True), expiry=_hour())
    with _sas_table(filled.table_name, ro) as t:
        assert len(list(t.list_entities())) == len(KEYS)
        assert _denied(t.create_entity, {"PartitionKey": "x", "RowKey": "y"}) == "AuthorizationPermissionMismatch"
        assert _denied(t.delete_entity, "a", "1") == "AuthorizationPermissionMismatch"
    add = generate_table_sas(CRED, filled.table_name, permission="a", expiry=_hour())
    with _sas_table(filled.table_name, add) as t:
        t.create_entity({"PartitionKey": "x", "RowKey": "y"})
        assert _denied(t.get_entity, "x", "y") == "AuthorizationPermissionMismatch"


def test_table_sas_expired_and_other_table(filled):
    past = datetime.now(timezone.utc) - timedelta(minutes=30)
    expired = generate_table_sas(CRED, filled.table_name, permission="r", expiry=past)
    with _sas_table(filled.table_name, expired) as t:
        assert _denied(lambda: list(t.list_entities())) == "AuthenticationFailed"
    sas = generate_table_sas(CRED, filled.table_name, permission="r", expiry=_hour())
    with _sas_table(unique_name("other"), sas) as t:
        assert _denied(t.get_entity, "a", "1") == "AuthorizationFailure"


def test_stored_access_policy(filled):
    start = datetime.now(timezone.utc) - timedelta(minutes=5)
    filled.set_table_access_policy({"readers": TableAccessPolicy(start=start, expiry=_hour(), permission="r")})
    sas = generate_table_sas(CRED, filled.table_name, policy_id="readers")
    assert "si=readers" in sas and "sp=" not in sas
    with _sas_table(filled.table_name, sas) as t:
        assert len(list(t.list_entities())) == len(KEYS)
        assert _denied(t.create_entity, {"PartitionKey": "x", "RowKey": "y"}) == "AuthorizationPermissionMismatch"
        # Removing the policy revokes the token.
        filled.set_table_access_policy({})
        assert _denied(t.get_entity, "a", "1") == "AuthenticationFailed"


def test_account_sas():
    sas = generate_account_sas(
        CRED,
        resource_types=ResourceTypes(service=True, container=True, object=True),
        permission=AccountSasPermissions(read=True, write=True, delete=True, list=True, add=True, update=True),
        expiry=_hour(),
    )
    name = unique_name("acct")
    with TableServiceClient(ENDPOINT, credential=AzureSasCredential(sas), **NO_RETRY) as svc:
        t = svc.create_table(name)
        assert name in [x.name for x in svc.list_tables()]
        t.create_entity({"PartitionKey": "p", "RowKey": "r", "v": 1})
        assert t.get_entity("p", "r")["v"] == 1
        props = svc.get_service_properties()
        assert "cors" in props
        svc.delete_table(name)

    # Object-only: entity operations yes, table operations no.
    obj_only = generate_account_sas(CRED, resource_types=ResourceTypes(object=True),
                                    permission=AccountSasPermissions(read=True, add=True), expiry=_hour())
    with TableServiceClient(ENDPOINT, credential=AzureSasCredential(obj_only), **NO_RETRY) as svc:
        assert _denied(svc.create_table, unique_name("acct")) == "AuthorizationResourceTypeMismatch"

    # Read-only: no writes.
    ro = generate_account_sas(CRED, resource_types=ResourceTypes(container=True, object=True),
                              permission=AccountSasPermissions(read=True, list=True), expiry=_hour())
    with TableServiceClient(ENDPOINT, credential=AzureSasCredential(ro), **NO_RETRY) as svc:
        assert _denied(svc.create_table, unique_name("acct")) == "AuthorizationPermissionMismatch"
        list(svc.list_tables())

    # Expired.
    old = generate_account_sas(CRED, resource_types=ResourceTypes(container=True),
                               permission=AccountSasPermissions(list=True),
                               expiry=datetime.now(timezone.utc) - timedelta(minutes=30))
    with TableServiceClient(ENDPOINT, credential=AzureSasCredential(old), **NO_RETRY) as svc:
        assert _denied(lambda: list(svc.list_tables())) == "AuthenticationFailed"
