"""Every EDM type round-tripped at its edges, and keys with unicode and
quotes."""
import math
import uuid
from datetime import datetime, timezone

import pytest
from azure.core.exceptions import HttpResponseError
from azure.data.tables import EdmType, EntityProperty, UpdateMode

from conftest import expect_error

I64_MAX = 2**63 - 1
I64_MIN = -(2**63)
GUID = uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833")
BINARY = bytes(range(256))


def _entity(pk="p", rk="r"):
    return {
        "PartitionKey": pk,
        "RowKey": rk,
        "i64max": EntityProperty(I64_MAX, EdmType.INT64),
        "i64min": EntityProperty(I64_MIN, EdmType.INT64),
        "i64small": EntityProperty(5, EdmType.INT64),
        "i32max": 2**31 - 1,
        "i32min": -(2**31),
        "nan": float("nan"),
        "inf": float("inf"),
        "ninf": float("-inf"),
        "dmax": 1.7976931348623157e308,
        "dtiny": 5e-324,
        "dtenth": 0.1,
        "dwhole": 2.0,
        "dexp": 1e-07,
        "dbig": 1e20,
        "dt7": EntityProperty("2024-01-02T03:04:05.1234567Z", EdmType.DATETIME),
        "dtmin": EntityProperty("1601-01-01T00:00:00Z", EdmType.DATETIME),
        "dtmax": EntityProperty("9999-12-31T23:59:59.9999999Z", EdmType.DATETIME),
        "dtpy": datetime(2020, 2, 29, 23, 59, 58, 987654, tzinfo=timezone.utc),
        "guid": GUID,
        "bin": BINARY,
        "binempty": b"",
        "t": True,
        "f": False,
        "s": "ünï©ødé 日本語 😀 'single' \"double\" \\ back",
        "empty": "",
    }


def _check(got):
    assert got["i64max"] == EntityProperty(I64_MAX, EdmType.INT64)
    assert got["i64min"] == EntityProperty(I64_MIN, EdmType.INT64)
    assert got["i64small"] == EntityProperty(5, EdmType.INT64)
    for k, v in (("i32max", 2**31 - 1), ("i32min", -(2**31))):
        assert type(got[k]) is int and got[k] == v, (k, got[k])
    assert math.isnan(got["nan"])
    assert got["inf"] == math.inf and got["ninf"] == -math.inf
    assert got["dmax"] == 1.7976931348623157e308
    assert got["dtiny"] == 5e-324
    assert got["dtenth"] == 0.1
    assert type(got["dwhole"]) is float and got["dwhole"] == 2.0
    assert got["dexp"] == 1e-07 and got["dbig"] == 1e20 and type(got["dbig"]) is float
    dt7 = got["dt7"]
    assert isinstance(dt7, datetime)
    assert dt7.tables_service_value == "2024-01-02T03:04:05.1234567Z"
    assert dt7 == datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)
    assert got["dtmin"] == datetime(1601, 1, 1, tzinfo=timezone.utc)
    assert got["dtmin"].tables_service_value == "1601-01-01T00:00:00Z"
    assert got["dtmax"].tables_service_value == "9999-12-31T23:59:59.9999999Z"
    assert got["dtpy"] == datetime(2020, 2, 29, 23, 59, 58, 987654, tzinfo=timezone.utc)
    assert got["guid"] == GUID and isinstance(got["guid"], uuid.UUID)
    assert got["bin"] == BINARY and isinstance(got["bin"], bytes)
    assert got["binempty"] == b""
    assert got["t"] is True and got["f"] is False
    assert got["s"] == "ünï©ødé 日本語 😀 'single' \"double\" \\ back"
    assert got["empty"] == ""


def test_every_type_round_trips(table):
    table.create_entity(_entity())
    got = table.get_entity("p", "r")
    _check(got)
    # The same values come back from a query...
    (q,) = list(table.query_entities("PartitionKey eq 'p'"))
    _check(q)
    # ...and survive being written back as read (the 7-digit DateTime is
    # re-sent as the service wrote it).
    table.update_entity(got, mode=UpdateMode.REPLACE)
    _check(table.get_entity("p", "r"))


@pytest.mark.parametrize(
    "name,value",
    [
        ("i64max", EntityProperty(I64_MAX, EdmType.INT64)),
        ("i64min", EntityProperty(I64_MIN, EdmType.INT64)),
        ("i32max", 2**31 - 1),
        ("dmax", 1.7976931348623157e308),
        ("dt7", datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)),
        ("guid", GUID),
        ("bin", BINARY),
        ("t", True),
        ("s", "ünï©ødé 日本語 😀 'single' \"double\" \\ back"),
    ],
)
def test_filter_by_each_type_with_parameters(table, name, value):
    table.create_entity(_entity("p", "hit"))
    other = _entity("p", "miss")
    for k in list(other):
        if k not in ("PartitionKey", "RowKey"):
            del other[k]
    other[name] = "not the same type"
    table.create_entity(other)
    if isinstance(value, EntityProperty):
        value = value.value
    if name == "dt7":
        # The SDK formats a datetime parameter with 6 fractional digits; the
        # stored value has 7, so ask for "at or after".
        got = list(table.query_entities(f"{name} ge @v", parameters={"v": value}))
    else:
        got = list(table.query_entities(f"{name} eq @v", parameters={"v": value}))
    assert [e["RowKey"] for e in got] == ["hit"]


def test_datetime_out_of_range(table):
    err = expect_error(HttpResponseError, 400, "OutOfRangeInput", table.create_entity,
                       {"PartitionKey": "p", "RowKey": "r",
                        "old": EntityProperty("1600-12-31T23:59:59Z", EdmType.DATETIME)})
    assert "The 'old' parameter of value '12/31/1600 23:59:59' is out of range." in str(err)


QUOTED_KEYS = [
    ("pk'with'quotes", "rk''double"),
    ('pk"dq"', "rk 'mixed\" end"),
    ("日本語", "ключ😀"),
    ("p%20not-escaped+", "r&=;,@$!"),
    ("", ""),
]


@pytest.mark.parametrize("pk,rk", QUOTED_KEYS)
def test_unicode_and_quote_bearing_keys(table, pk, rk):
    table.create_entity({"PartitionKey": pk, "RowKey": rk, "v": 1})
    got = table.get_entity(pk, rk)
    assert (got["PartitionKey"], got["RowKey"], got["v"]) == (pk, rk, 1)
    table.update_entity({"PartitionKey": pk, "RowKey": rk, "v": 2}, mode=UpdateMode.MERGE)
    table.upsert_entity({"PartitionKey": pk, "RowKey": rk, "w": 3}, mode=UpdateMode.MERGE)
    found = list(table.query_entities("PartitionKey eq @pk and RowKey eq @rk", parameters={"pk": pk, "rk": rk}))
    assert [(e["PartitionKey"], e["RowKey"], e["v"], e["w"]) for e in found] == [(pk, rk, 2, 3)]
    table.delete_entity(pk, rk)
    assert list(table.list_entities()) == []
