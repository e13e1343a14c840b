"""Access policies, service properties and service stats."""
from datetime import datetime, timedelta, timezone

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.data.tables import (
    TableAccessPolicy,
    TableAnalyticsLogging,
    TableCorsRule,
    TableMetrics,
    TableRetentionPolicy,
    TableServiceClient,
)

from conftest import ACCOUNT, CRED, ENDPOINT, NO_RETRY, error_code, expect_error, redirect_transport, unique_name


def test_access_policies_round_trip(table):
    assert table.get_table_access_policy() == {}
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    expiry = datetime(2031, 12, 31, 12, 30, tzinfo=timezone.utc)
    table.set_table_access_policy({
        "readers": TableAccessPolicy(start=start, expiry=expiry, permission="r"),
        "writers": TableAccessPolicy(expiry=expiry, permission="raud"),
        "bare": None,
    })
    got = table.get_table_access_policy()
    assert set(got) == {"readers", "writers", "bare"}
    assert got["readers"].permission == "r"
    assert got["readers"].start == start and got["readers"].expiry == expiry
    assert got["writers"].permission == "raud" and got["writers"].start is None
    assert got["writers"].expiry == expiry
    # A policy without details comes back as None or as an empty policy.
    bare = got["bare"]
    assert bare is None or (bare.start, bare.expiry, bare.permission) == (None, None, None)
    # Setting replaces all policies; an empty set clears them.
    table.set_table_access_policy({"only": TableAccessPolicy(permission="a")})
    got = table.get_table_access_policy()
    assert list(got) == ["only"] and got["only"].permission == "a"
    table.set_table_access_policy({})
    assert table.get_table_access_policy() == {}


def test_more_than_five_policies(table):
    # The SDK turns the service's 400 InvalidXmlDocument into a ValueError
    # when more than five identifiers were sent.
    policies = {f"id{i}": TableAccessPolicy(permission="r") for i in range(6)}
    with pytest.raises(ValueError, match="Too many access policies"):
        table.set_table_access_policy(policies)
    assert table.get_table_access_policy() == {}


def test_access_policy_of_missing_table(svc):
    t = svc.get_table_client(unique_name("nx"))
    expect_error(ResourceNotFoundError, 404, "TableNotFound", t.get_table_access_policy)


def test_service_properties(svc):
    before = svc.get_service_properties()
    try:
        svc.set_service_properties(
            analytics_logging=TableAnalyticsLogging(read=True, write=True, delete=False,
                                                    retention_policy=TableRetentionPolicy(enabled=True, days=3)),
            hour_metrics=TableMetrics(enabled=True, include_apis=True,
                                      retention_policy=TableRetentionPolicy(enabled=True, days=7)),
            minute_metrics=TableMetrics(enabled=False),
            cors=[TableCorsRule(["https://a.example", "http://localhost:3000"], ["GET", "PUT"],
                                allowed_headers=["x-ms-meta-*"], exposed_headers=["x-ms-*"], max_age_in_seconds=600)],
        )
        p = svc.get_service_properties()
        log = p["analytics_logging"]
        assert (log.version, log.read, log.write, log.delete) == ("1.0", True, True, False)
        assert (log.retention_policy.enabled, log.retention_policy.days) == (True, 3)
        hm = p["hour_metrics"]
        assert (hm.enabled, hm.include_apis, hm.retention_policy.enabled, hm.retention_policy.days) == (True, True, True, 7)
        mm = p["minute_metrics"]
        assert (mm.enabled, mm.retention_policy.enabled) == (False, False)
        (rule,) = p["cors"]
        assert rule.allowed_origins == ["https://a.example", "http://localhost:3000"]
        assert rule.allowed_methods == ["GET", "PUT"]
        assert rule.allowed_headers == ["x-ms-meta-*"] and rule.exposed_headers == ["x-ms-*"]
        assert rule.max_age_in_seconds == 600

        # A partial update keeps what it leaves out.
        svc.set_service_properties(minute_metrics=TableMetrics(enabled=True, include_apis=False))
        p = svc.get_service_properties()
        assert p["minute_metrics"].enabled is True and p["minute_metrics"].include_apis is False
        assert p["hour_metrics"].retention_policy.days == 7
        assert len(p["cors"]) == 1
    finally:
        svc.set_service_properties(analytics_logging=before["analytics_logging"], hour_metrics=before["hour_metrics"],
                                   minute_metrics=before["minute_metrics"], cors=before["cors"])
    after = svc.get_service_properties()
    assert after["cors"] == [] or len(after["cors"]) == len(before["cors"])
    assert after["hour_metrics"].enabled == before["hour_metrics"].enabled


def test_service_stats_on_the_secondary_endpoint():
    # get_service_stats always goes to the secondary location. The SDK
    # derives it for a host-style account URL (account-secondary.table.…),
    # so this client addresses the account by host name; its connections
    # go to the test server (see conftest.redirect_transport).
    primary = f"{ACCOUNT}.table.core.windows.net"
    secondary = f"{ACCOUNT}-secondary.table.core.windows.net"
    transport, adapter = redirect_transport([primary, secondary])
    with TableServiceClient(f"http://{primary}", credential=CRED, transport=transport, **NO_RETRY) as svc:
        before = datetime.now(timezone.utc) - timedelta(minutes=5)
        stats = svc.get_service_stats()
        geo = stats["geo_replication"]
        assert geo["status"] == "live"
        assert isinstance(geo["last_sync_time"], datetime)
        assert geo["last_sync_time"] >= before
        assert adapter.seen == [("GET", f"http://{secondary}/?restype=service&comp=stats")]
        # The primary endpoint does not serve stats, as on the service.
        with pytest.raises(HttpResponseError) as info:
            svc._client.service.get_statistics()  # pylint: disable=protected-access
        assert info.value.status_code == 400
        assert error_code(info.value) == "InvalidQueryParameterValue"


def test_service_stats_path_style():
    # Against a path-style endpoint the SDK makes the secondary's URL by
    # putting "<account>-secondary" before the primary's path, and signs
    # the request as the primary's: partita answers it as the secondary's
    # stats (docs/COMPATIBILITY.md §13), as Azurite does.
    sent = []
    with TableServiceClient(ENDPOINT, credential=CRED, **NO_RETRY) as svc:
        before = datetime.now(timezone.utc) - timedelta(minutes=5)
        stats = svc.get_service_stats(raw_request_hook=lambda r: sent.append(r.http_request.url))
        geo = stats["geo_replication"]
        assert geo["status"] == "live"
        assert geo["last_sync_time"] >= before
    base = ENDPOINT[: -len(ACCOUNT)]
    assert sent == [f"{base}{ACCOUNT}-secondary/{ACCOUNT}/?restype=service&comp=stats"]
