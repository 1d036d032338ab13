"""Time expressions of lineage queries (design §4.1): parse_time_expression."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from upstream.model.timeexpr import parse_time_expression

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", datetime(1970, 1, 1, tzinfo=UTC)),
        ("1476321533", datetime(2016, 10, 13, 1, 18, 53, tzinfo=UTC)),
        ("1476321533.5", datetime(2016, 10, 13, 1, 18, 53, 500000, tzinfo=UTC)),
        ("2026-11-01T12:00:00Z", datetime(2026, 11, 1, 12, tzinfo=UTC)),
        ("2026-11-01T14:30:00+02:00", datetime(2026, 11, 1, 12, 30, tzinfo=UTC)),
        ("2026-11-01T12:00:00", datetime(2026, 11, 1, 12, tzinfo=UTC)),
        ("2026-11-01", datetime(2026, 11, 1, tzinfo=UTC)),
        ("now", NOW),
        ("NOW", NOW),
        ("  now  ", NOW),
        ("now-7d", NOW - timedelta(days=7)),
        ("now+4h", NOW + timedelta(hours=4)),
        ("now-30m", NOW - timedelta(minutes=30)),
        ("now-15s", NOW - timedelta(seconds=15)),
        ("now-500ms", NOW - timedelta(milliseconds=500)),
        ("now-1d+4h", NOW - timedelta(hours=20)),
        ("now-1d-1d-1m", NOW - timedelta(days=2, minutes=1)),
        # A `+` in a query string arrives as a space.
        ("now 4h", NOW + timedelta(hours=4)),
        ("now-1d 4h", NOW - timedelta(hours=20)),
    ],
)
def test_valid_expressions(text: str, expected: datetime) -> None:
    assert parse_time_expression(text, NOW) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("-5", "negative"),
        ("-1476321533", "negative"),
        ("1969-12-31T23:59:59Z", "negative"),
        ("now-60000d", "negative"),
        ("yesterday", "is not a time"),
        ("now-7", "is not a time"),
        ("now-7x", "is not a time"),
        ("now-", "is not a time"),
        ("now7d", "is not a time"),
        ("now-7D", "is not a time"),
        ("now--7d", "is not a time"),
        ("7d", "is not a time"),
        ("nowhere", "is not a time"),
        ("2026-13-01", "is not a time"),
        ("12.5.3", "is not a time"),
        ("now+99999999999d", "out of range"),
        ("99999999999999999999", "out of range"),
    ],
)
def test_invalid_expressions(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_time_expression(text, NOW)


def test_result_is_timezone_aware_utc() -> None:
    moment = parse_time_expression("2026-11-01T12:00:00", NOW)
    assert moment.utcoffset() == timedelta(0)


@given(
    terms=st.lists(
        st.tuples(
            st.sampled_from("+-"),
            st.integers(0, 1000),
            st.sampled_from(["ms", "s", "m", "h", "d"]),
        ),
        max_size=5,
    )
)
def test_terms_add_up(terms: list[tuple[str, int, str]]) -> None:
    unit = {
        "ms": timedelta(milliseconds=1),
        "s": timedelta(seconds=1),
        "m": timedelta(minutes=1),
        "h": timedelta(hours=1),
        "d": timedelta(days=1),
    }
    text = "now" + "".join(f"{sign}{n}{u}" for sign, n, u in terms)
    expected = NOW + sum(
        ((1 if sign == "+" else -1) * n * unit[u] for sign, n, u in terms), timedelta()
    )
    assert parse_time_expression(text, NOW) == expected
