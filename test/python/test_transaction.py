"""submit_transaction with every operation kind, and the failing index in
TableTransactionError."""
import pytest
from azure.core import MatchConditions
from azure.data.tables import TableTransactionError, TransactionOperation, UpdateMode



def _state(table):
    return {e["RowKey"]: {k: v for k, v in e.items() if k not in ("PartitionKey", "RowKey")}
            for e in table.list_entities()}


def test_every_operation_kind(table):
    for rk in ("upd-merge", "upd-replace", "ups-merge", "del", "del-etag", "upd-etag"):
        table.create_entity({"PartitionKey": "p", "RowKey": rk, "old": 1})
    etag_del = table.get_entity("p", "del-etag").metadata["etag"]
    etag_upd = table.get_entity("p", "upd-etag").metadata["etag"]
    ops = [
        ("create", {"PartitionKey": "p", "RowKey": "new", "v": 1}),
        (TransactionOperation.UPDATE, {"PartitionKey": "p", "RowKey": "upd-merge", "v": 2}, {"mode": UpdateMode.MERGE}),
        ("update", {"PartitionKey": "p", "RowKey": "upd-replace", "v": 3}, {"mode": "replace"}),
        ("upsert", {"PartitionKey": "p", "RowKey": "ups-merge", "v": 4}, {"mode": UpdateMode.MERGE}),
        ("upsert", {"PartitionKey": "p", "RowKey": "ups-new", "v": 5}, {"mode": UpdateMode.REPLACE}),
        ("delete", {"PartitionKey": "p", "RowKey": "del"}),
        ("delete", {"PartitionKey": "p", "RowKey": "del-etag"},
         {"etag": etag_del, "match_condition": MatchConditions.IfNotModified}),
        ("update", {"PartitionKey": "p", "RowKey": "upd-etag", "v": 6},
         {"mode": "replace", "etag": etag_upd, "match_condition": MatchConditions.IfNotModified}),
    ]
    results = table.submit_transaction(ops)
    assert len(results) == len(ops)
    # Every operation but the deletes returns the entity's new ETag.
    for (kind, *_), r in zip(ops, results):
        if kind == "delete":
            assert "etag" not in r or r["etag"] is None, r
        else:
            assert r["etag"].startswith('W/"datetime\''), r
    assert _state(table) == {
        "new": {"v": 1},
        "upd-merge": {"old": 1, "v": 2},
        "upd-replace": {"v": 3},
        "ups-merge": {"old": 1, "v": 4},
        "ups-new": {"v": 5},
        "upd-etag": {"v": 6},
    }
    assert table.get_entity("p", "upd-etag").metadata["etag"] == results[7]["etag"]


@pytest.mark.parametrize("fail_at", [0, 3, 5])
def test_failing_index(table, fail_at):
    table.create_entity({"PartitionKey": "p", "RowKey": "exists", "keep": True})
    ops = [("create", {"PartitionKey": "p", "RowKey": f"n{i}"}) for i in range(6)]
    ops[fail_at] = ("create", {"PartitionKey": "p", "RowKey": "exists"})
    with pytest.raises(TableTransactionError) as info:
        table.submit_transaction(ops)
    err = info.value
    assert err.index == fail_at
    assert err.status_code == 409
    assert err.error_code == "EntityAlreadyExists"
    assert f"{fail_at}:The specified entity already exists." in err.message
    # All or nothing: nothing of the batch was written.
    assert _state(table) == {"exists": {"keep": True}}


def test_failing_index_on_412_and_404(table):
    meta = table.create_entity({"PartitionKey": "p", "RowKey": "a", "v": 1})
    table.update_entity({"PartitionKey": "p", "RowKey": "a", "v": 2})
    with pytest.raises(TableTransactionError) as info:
        table.submit_transaction([
            ("upsert", {"PartitionKey": "p", "RowKey": "b"}),
            ("update", {"PartitionKey": "p", "RowKey": "a", "v": 3},
             {"etag": meta["etag"], "match_condition": MatchConditions.IfNotModified}),
        ])
    assert (info.value.index, info.value.status_code, info.value.error_code) == (1, 412, "UpdateConditionNotSatisfied")
    with pytest.raises(TableTransactionError) as info:
        table.submit_transaction([
            ("upsert", {"PartitionKey": "p", "RowKey": "b"}),
            ("upsert", {"PartitionKey": "p", "RowKey": "c"}),
            ("delete", {"PartitionKey": "p", "RowKey": "missing"}),
        ])
    assert (info.value.index, info.value.status_code, info.value.error_code) == (2, 404, "ResourceNotFound")
    assert _state(table) == {"a": {"v": 2}}


def test_same_entity_twice(table):
    with pytest.raises(TableTransactionError) as info:
        table.submit_transaction([
            ("create", {"PartitionKey": "p", "RowKey": "x"}),
            ("upsert", {"PartitionKey": "p", "RowKey": "x"}),
        ])
    assert info.value.status_code == 400
    assert info.value.error_code == "InvalidDuplicateRow"
    assert info.value.index == 1
    assert _state(table) == {}


def test_hundred_operations(table):
    ops = [("create", {"PartitionKey": "p", "RowKey": f"{i:03d}", "i": i}) for i in range(100)]
    assert len(table.submit_transaction(ops)) == 100
    assert [e["i"] for e in table.list_entities()] == list(range(100))


def test_missing_table(svc):
    t = svc.get_table_client("nosuchtable0123")
    with pytest.raises(TableTransactionError) as info:
        t.submit_transaction([("create", {"PartitionKey": "p", "RowKey": "r"})])
    assert (info.value.index, info.value.status_code, info.value.error_code) == (0, 404, "TableNotFound")
