"""Entity CRUD with every mode, ETags and conditional writes, and the
exception type and error code for 404, 409 and 412."""
import pytest
from azure.core import MatchConditions
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.data.tables import TableEntity, UpdateMode

from conftest import error_code, expect_error


def test_create_get_delete(table):
    meta = table.create_entity({"PartitionKey": "p", "RowKey": "r", "name": "x", "n": 1})
    assert meta["etag"].startswith('W/"datetime\'')
    got = table.get_entity("p", "r")
    assert isinstance(got, TableEntity)
    assert dict(got) == {"PartitionKey": "p", "RowKey": "r", "name": "x", "n": 1}
    assert got.metadata["etag"] == meta["etag"]
    assert got.metadata["timestamp"] is not None
    table.delete_entity("p", "r")
    expect_error(ResourceNotFoundError, 404, "ResourceNotFound", table.get_entity, "p", "r")
    # Deleting a missing entity: the SDK swallows the 404.
    table.delete_entity("p", "r")


def test_create_existing_is_409(table):
    table.create_entity({"PartitionKey": "p", "RowKey": "r"})
    expect_error(ResourceExistsError, 409, "EntityAlreadyExists", table.create_entity, {"PartitionKey": "p", "RowKey": "r"})


def test_update_replace_and_merge(table):
    table.create_entity({"PartitionKey": "p", "RowKey": "r", "a": 1, "b": "two"})
    table.update_entity({"PartitionKey": "p", "RowKey": "r", "c": True}, mode=UpdateMode.MERGE)
    assert dict(table.get_entity("p", "r")) == {"PartitionKey": "p", "RowKey": "r", "a": 1, "b": "two", "c": True}
    table.update_entity({"PartitionKey": "p", "RowKey": "r", "d": 4.5}, mode=UpdateMode.REPLACE)
    assert dict(table.get_entity("p", "r")) == {"PartitionKey": "p", "RowKey": "r", "d": 4.5}
    # update of a missing entity is 404 in both modes
    for mode in (UpdateMode.MERGE, UpdateMode.REPLACE):
        expect_error(ResourceNotFoundError, 404, "ResourceNotFound",
                     table.update_entity, {"PartitionKey": "p", "RowKey": "missing"}, mode=mode)


def test_upsert_replace_and_merge(table):
    table.upsert_entity({"PartitionKey": "p", "RowKey": "m", "a": 1}, mode=UpdateMode.MERGE)
    table.upsert_entity({"PartitionKey": "p", "RowKey": "m", "b": 2}, mode=UpdateMode.MERGE)
    assert dict(table.get_entity("p", "m")) == {"PartitionKey": "p", "RowKey": "m", "a": 1, "b": 2}
    table.upsert_entity({"PartitionKey": "p", "RowKey": "x", "a": 1}, mode=UpdateMode.REPLACE)
    table.upsert_entity({"PartitionKey": "p", "RowKey": "x", "b": 2}, mode=UpdateMode.REPLACE)
    assert dict(table.get_entity("p", "x")) == {"PartitionKey": "p", "RowKey": "x", "b": 2}


@pytest.mark.parametrize("mode", [UpdateMode.MERGE, UpdateMode.REPLACE])
def test_conditional_update_412(table, mode):
    first = table.create_entity({"PartitionKey": "p", "RowKey": "r", "v": 1})
    second = table.update_entity({"PartitionKey": "p", "RowKey": "r", "v": 2}, mode=mode,
                                 etag=first["etag"], match_condition=MatchConditions.IfNotModified)
    assert second["etag"] != first["etag"]
    # The old ETag no longer matches.
    expect_error(ResourceModifiedError, 412, "UpdateConditionNotSatisfied",
                 table.update_entity, {"PartitionKey": "p", "RowKey": "r", "v": 3}, mode=mode,
                 etag=first["etag"], match_condition=MatchConditions.IfNotModified)
    assert table.get_entity("p", "r")["v"] == 2
    # An entity read back carries its ETag; updating it with that works.
    e = table.get_entity("p", "r")
    e["v"] = 4
    table.update_entity(e, mode=mode, etag=e.metadata["etag"], match_condition=MatchConditions.IfNotModified)
    assert table.get_entity("p", "r")["v"] == 4


def test_conditional_delete_412(table):
    first = table.create_entity({"PartitionKey": "p", "RowKey": "r"})
    table.update_entity({"PartitionKey": "p", "RowKey": "r", "x": 1})
    expect_error(ResourceModifiedError, 412, "UpdateConditionNotSatisfied",
                 table.delete_entity, "p", "r", etag=first["etag"], match_condition=MatchConditions.IfNotModified)
    current = table.get_entity("p", "r")
    table.delete_entity(current, etag=current.metadata["etag"], match_condition=MatchConditions.IfNotModified)
    expect_error(ResourceNotFoundError, 404, "ResourceNotFound", table.get_entity, "p", "r")


def test_select_on_get(table):
    table.create_entity({"PartitionKey": "p", "RowKey": "r", "a": 1, "b": 2, "c": 3})
    got = table.get_entity("p", "r", select=["a", "c"])
    assert dict(got) == {"a": 1, "c": 3}


def test_missing_keys_and_bad_values(table):
    # A key with a character the service forbids: 400 with the service's
    # code and message.
    err = expect_error(HttpResponseError, 400, "OutOfRangeInput", table.create_entity,
                       {"PartitionKey": "p", "RowKey": "a/b"})
    assert "The 'RowKey' parameter of value 'a/b' is out of range." in str(err)
    # A property name that starts with a digit.
    expect_error(HttpResponseError, 400, "PropertyNameInvalid", table.create_entity,
                 {"PartitionKey": "p", "RowKey": "r", "1x": 1})
    assert list(table.list_entities()) == []


def test_none_property_is_not_stored(table):
    table.create_entity({"PartitionKey": "p", "RowKey": "r", "a": 1, "gone": None})
    assert dict(table.get_entity("p", "r")) == {"PartitionKey": "p", "RowKey": "r", "a": 1}
    table.upsert_entity({"PartitionKey": "p", "RowKey": "r2", "b": None, "c": "x"}, mode=UpdateMode.REPLACE)
    assert dict(table.get_entity("p", "r2")) == {"PartitionKey": "p", "RowKey": "r2", "c": "x"}


@pytest.mark.parametrize("missing", ["PartitionKey", "RowKey"])
def test_missing_key_needs_value(table, missing):
    # The SDK turns the service's 400 PropertiesNeedValue into a ValueError
    # naming the missing key; the service's error is its cause.
    entity = {"PartitionKey": "p", "RowKey": "r", "v": 1}
    del entity[missing]
    with pytest.raises(ValueError, match=f"{missing} must be present in an entity") as info:
        table.create_entity(entity)
    cause = info.value.__cause__
    assert isinstance(cause, HttpResponseError) and cause.status_code == 400
    assert error_code(cause) == "PropertiesNeedValue"
    assert list(table.list_entities()) == []
