"""Table create, delete, list and query."""
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError

import pytest

from conftest import error_code, expect_error, table_client, unique_name


def test_create_list_query_delete(svc):
    prefix = unique_name("tq")[:12]
    names = sorted(f"{prefix}{i:02d}" for i in range(5))
    for n in names:
        t = svc.create_table(n)
        assert t.table_name == n
    try:
        listed = [t.name for t in svc.list_tables()]
        assert set(names) <= set(listed)
        got = [t.name for t in svc.query_tables("TableName ge @lo and TableName lt @hi",
                                                parameters={"lo": prefix, "hi": prefix + "~"})]
        assert got == names
        got = [t.name for t in svc.query_tables(f"TableName eq '{names[2]}'")]
        assert got == [names[2]]
    finally:
        for n in names:
            svc.delete_table(n)
    assert [t.name for t in svc.query_tables(f"TableName ge '{prefix}' and TableName lt '{prefix}~'")] == []


def test_list_tables_by_page(svc):
    prefix = unique_name("tp")[:12]
    names = sorted(f"{prefix}{i:02d}" for i in range(7))
    for n in names:
        svc.create_table(n)
    try:
        pager = svc.query_tables(f"TableName ge '{prefix}' and TableName lt '{prefix}~'", results_per_page=3).by_page()
        pages = [[t.name for t in page] for page in pager]
        assert pages == [names[0:3], names[3:6], names[6:7]]
        # Resume from the continuation token of the first page.
        pager = svc.query_tables(f"TableName ge '{prefix}' and TableName lt '{prefix}~'", results_per_page=3).by_page()
        first = [t.name for t in next(pager)]
        token = pager.continuation_token
        assert first == names[0:3] and token
        resumed = svc.query_tables(f"TableName ge '{prefix}' and TableName lt '{prefix}~'",
                                   results_per_page=3).by_page(continuation_token=token)
        assert [t.name for t in next(resumed)] == names[3:6]
    finally:
        for n in names:
            svc.delete_table(n)


def test_table_client_create_and_delete():
    name = unique_name()
    with table_client(name) as t:
        item = t.create_table()
        assert item.name == name
        expect_error(ResourceExistsError, 409, "TableAlreadyExists", t.create_table)
        t.delete_table()
        # The SDK's delete_table swallows the service's 404 for a missing
        # table; the table is gone all the same.
        t.delete_table()
        expect_error(ResourceNotFoundError, 404, "TableNotFound", t.get_entity, "p", "r")


def test_create_if_not_exists_and_case_insensitive_names(svc):
    name = unique_name("Ci")
    t = svc.create_table_if_not_exists(name)
    t2 = svc.create_table_if_not_exists(name)
    assert t.table_name == t2.table_name == name
    try:
        expect_error(ResourceExistsError, 409, "TableAlreadyExists", svc.create_table, name.upper())
    finally:
        svc.delete_table(name)


def test_missing_table_is_404(svc):
    t = svc.get_table_client(unique_name("nx"))
    expect_error(ResourceNotFoundError, 404, "TableNotFound", t.get_entity, "p", "r")
    expect_error(ResourceNotFoundError, 404, "TableNotFound", t.create_entity, {"PartitionKey": "p", "RowKey": "r"})


def test_invalid_table_name(svc):
    # The SDK turns the service's 400 into a ValueError only when the error
    # code and message are exactly the service's (InvalidResourceName "The
    # specified resource name contains invalid characters", OutOfRangeInput
    # "The specified resource name length is not within the permissible
    # limits"); the service's error stays attached as the cause.
    for name, code in (("1bad", "InvalidResourceName"), ("a-b-c", "InvalidResourceName"), ("ab", "OutOfRangeInput")):
        with pytest.raises(ValueError, match="Storage table names must be alphanumeric") as info:
            svc.create_table(name)
        cause = info.value.__context__
        assert isinstance(cause, HttpResponseError), repr(cause)
        assert cause.status_code == 400
        assert error_code(cause) == code, (name, error_code(cause))
