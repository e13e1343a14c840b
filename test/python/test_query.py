"""Entity queries: filters with parameters, paging with continuation
tokens, $select."""
from azure.core.exceptions import HttpResponseError

from conftest import expect_error


def _fill(table, n=25):
    for i in range(n):
        pk = f"p{i % 2}"
        table.create_entity({"PartitionKey": pk, "RowKey": f"r{i:03d}", "i": i, "even": i % 2 == 0,
                             "name": f"n'{i}", "score": i / 4})
    return sorted(((f"p{i % 2}", f"r{i:03d}") for i in range(n)))


def _keys(entities):
    return [(e["PartitionKey"], e["RowKey"]) for e in entities]


def test_list_returns_key_order(table):
    want = _fill(table)
    assert _keys(table.list_entities()) == want


def test_filters_with_parameters(table):
    _fill(table)
    got = table.query_entities("PartitionKey eq @pk and i ge @lo and i lt @hi", parameters={"pk": "p0", "lo": 4, "hi": 12})
    assert [e["i"] for e in got] == [4, 6, 8, 10]
    got = table.query_entities("name eq @n", parameters={"n": "n'7"})
    assert [e["i"] for e in got] == [7]
    got = table.query_entities("even eq @b and score gt @s", parameters={"b": False, "s": 5.0})
    assert [e["i"] for e in got] == [21, 23]
    got = table.query_entities("RowKey ge 'r020' or i eq 1")
    assert sorted(e["i"] for e in got) == [1, 20, 21, 22, 23, 24]
    got = table.query_entities("not (i lt 23)")
    assert sorted(e["i"] for e in got) == [23, 24]
    assert list(table.query_entities("i eq @x", parameters={"x": 1000})) == []


def test_paging_by_page_with_continuation(table):
    want = _fill(table)
    pages = [_keys(p) for p in table.list_entities(results_per_page=10).by_page()]
    assert [len(p) for p in pages] == [10, 10, 5]
    assert [k for p in pages for k in p] == want

    pager = table.query_entities("i ge @lo", parameters={"lo": 3}, results_per_page=7).by_page()
    first = _keys(next(pager))
    token = pager.continuation_token
    assert token and isinstance(token, dict) and {"PartitionKey", "RowKey"} <= set(token)
    # A new query resumes from the token where the first left off.
    rest = table.query_entities("i ge @lo", parameters={"lo": 3}, results_per_page=7).by_page(continuation_token=token)
    resumed = [k for p in rest for k in _keys(p)]
    expected = [k for k in want if int(k[1][1:]) >= 3]
    assert first + resumed == expected
    assert len(first) == 7


def test_select(table):
    _fill(table, 4)
    got = list(table.query_entities("PartitionKey eq 'p0'", select=["i", "name", "missing"]))
    assert [dict(e) for e in got] == [
        {"i": 0, "name": "n'0", "missing": None},
        {"i": 2, "name": "n'2", "missing": None},
    ]
    # Each selected entity still has its ETag.
    assert all(e.metadata["etag"] for e in got)
    got = list(table.list_entities(select="RowKey"))
    assert [dict(e) for e in got] == [{"RowKey": f"r{i:03d}"} for i in (0, 2, 1, 3)]


def test_bad_filter_is_400(table):
    _fill(table, 2)
    err = expect_error(HttpResponseError, 400, "InvalidInput", lambda: list(table.query_entities("i eq eq 1")))
    assert "Syntax error" in err.message


def test_service_page_size_is_1000(table):
    for b in range(11):
        table.submit_transaction([("create", {"PartitionKey": "p", "RowKey": f"{b * 100 + i:05d}"}) for i in range(100)])
    pages = [[e["RowKey"] for e in p] for p in table.list_entities().by_page()]
    assert [len(p) for p in pages] == [1000, 100]
    assert [rk for p in pages for rk in p] == [f"{i:05d}" for i in range(1100)]


def test_page_size_above_1000_is_400(table):
    _fill(table, 2)
    err = expect_error(HttpResponseError, 400, "InvalidInput", lambda: next(table.list_entities(results_per_page=1001).by_page()))
    assert "One of the request inputs is not valid." in err.message
