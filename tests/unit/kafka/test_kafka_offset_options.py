"""Offset option parsing: Spark's names, JSON format and rules (no broker)."""
from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connector.errors import ConfigError
from connector.kafka import OffsetKind, OffsetSpec, parse_offsets_option
from connector.options import parse_any

OK = [
    ("startingOffsets", "earliest", False, OffsetSpec(OffsetKind.EARLIEST)),
    ("startingOffsets", " EARLIEST ", False, OffsetSpec(OffsetKind.EARLIEST)),
    ("startingOffsets", "latest", False, OffsetSpec(OffsetKind.LATEST)),
    ("endingOffsets", "latest", True, OffsetSpec(OffsetKind.LATEST, is_ending=True)),
    ("startingOffsets", '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}', False,
     OffsetSpec(OffsetKind.OFFSETS, (("topicA", 0, 23), ("topicA", 1, -1), ("topicB", 0, -2)))),
    ("endingOffsets", '{"t":{"1":-1,"0":5}}', True,
     OffsetSpec(OffsetKind.OFFSETS, (("t", 0, 5), ("t", 1, -1)), is_ending=True)),
    ("startingTimestamp", "1700000000000", False,
     OffsetSpec(OffsetKind.TIMESTAMP, timestamp=1700000000000)),
    ("endingTimestamp", "0", True, OffsetSpec(OffsetKind.TIMESTAMP, timestamp=0, is_ending=True)),
    ("startingOffsetsByTimestamp", '{"t":{"0":1000,"2":2000}}', False,
     OffsetSpec(OffsetKind.TIMESTAMPS, (("t", 0, 1000), ("t", 2, 2000)))),
    ("STARTINGOFFSETSBYTIMESTAMP", '{"t":{"0":1}}', False,
     OffsetSpec(OffsetKind.TIMESTAMPS, (("t", 0, 1),))),
]


@pytest.mark.parametrize("name,value,is_ending,expected", OK)
def test_parse_ok(name, value, is_ending, expected):
    assert parse_offsets_option(name, value, is_ending=is_ending) == expected


BAD = [
    ("endingOffsets", "earliest", True, "ending offset can't be earliest"),
    ("endingOffsets", '{"t":{"0":-2}}', True, "can't be earliest"),
    ("startingOffsets", '{"t":{"0":-3}}', False, "offset -3"),
    ("startingOffsets", "nope", False, "expected e.g."),
    ("startingOffsets", "[1,2]", False, "expected e.g."),
    ("startingOffsets", "{}", False, "expected e.g."),
    ("startingOffsets", '{"t":{"x":1}}', False, "expected e.g."),
    ("startingOffsets", '{"t":{"-1":1}}', False, "expected e.g."),
    ("startingOffsets", '{"t":{"0":"1"}}', False, "expected e.g."),
    ("startingOffsets", '{"t":{"0":true}}', False, "expected e.g."),
    ("startingOffsets", '{"t":{"0":1.5}}', False, "expected e.g."),
    ("startingOffsets", '{"t":5}', False, "expected e.g."),
    ("startingTimestamp", "yesterday", False, "milliseconds"),
    ("startingTimestamp", "-5", False, ">= 0"),
    ("startingOffsetsByTimestamp", '{"t":{"0":-1}}', False, ">= 0"),
    ("startingOffsetsByTimestamp", "latest", False, "expected e.g."),
    ("subscribe", "x", False, "is not a starting offset option"),
]


@pytest.mark.parametrize("name,value,is_ending,fragment", BAD)
def test_parse_errors(name, value, is_ending, fragment):
    with pytest.raises(ConfigError, match=None) as info:
        parse_offsets_option(name, value, is_ending=is_ending)
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)


def test_batch_rules_refuse_latest_start():
    with pytest.raises(ConfigError, match="starting offset can't be latest"):
        parse_offsets_option("startingOffsets", "latest", is_ending=False, batch=True)
    with pytest.raises(ConfigError, match="can't be latest"):
        parse_offsets_option("startingOffsets", '{"t":{"0":-1}}', is_ending=False, batch=True)
    # Streaming (batch=False) accepts both.
    assert parse_offsets_option("startingOffsets", "latest", is_ending=False).kind == "latest"


def test_strategy_is_validated_and_carried():
    spec = parse_offsets_option("startingTimestamp", "5", is_ending=False, strategy="LATEST")
    assert spec.strategy == "latest"
    with pytest.raises(ConfigError, match="'error' or 'latest'"):
        parse_offsets_option("startingTimestamp", "5", is_ending=False, strategy="skip")


PRECEDENCE = [
    ({}, False, "earliest", None),
    ({"startingOffsets": "latest"}, False, "earliest", OffsetSpec(OffsetKind.LATEST)),
    ({"startingOffsets": "latest", "startingOffsetsByTimestamp": '{"t":{"0":7}}'}, False,
     "earliest", OffsetSpec(OffsetKind.TIMESTAMPS, (("t", 0, 7),))),
    ({"startingOffsets": "latest", "startingOffsetsByTimestamp": '{"t":{"0":7}}',
      "startingTimestamp": "9"}, False, "earliest", OffsetSpec(OffsetKind.TIMESTAMP, timestamp=9)),
    ({"startingTimestamp": "9", "startingOffsetsByTimestampStrategy": "latest"}, False,
     "earliest", OffsetSpec(OffsetKind.TIMESTAMP, timestamp=9, strategy="latest")),
    ({"startingTimestamp": "9", "endingOffsets": '{"t":{"0":3}}'}, True, "latest",
     OffsetSpec(OffsetKind.OFFSETS, (("t", 0, 3),), is_ending=True)),
    ({"endingtimestamp": "11"}, True, "latest", OffsetSpec(OffsetKind.TIMESTAMP, timestamp=11,
                                                           is_ending=True)),
]


@pytest.mark.parametrize("options,is_ending,default,expected", PRECEDENCE)
def test_precedence_like_spark(options, is_ending, default, expected):
    """The option parser owns Spark's precedence (global timestamp > by-timestamp > offsets)."""
    parsed = parse_any({"asyncapi": "doc.yaml", "channel": "c", **options})
    assert (parsed.ending if is_ending else parsed.starting) == expected


def test_an_offset_spec_carries_exactly_its_kinds_data():
    with pytest.raises(TypeError):
        OffsetSpec("earliest")  # a string kind: OffsetKind only
    with pytest.raises(ValueError, match="per-partition values"):
        OffsetSpec(OffsetKind.OFFSETS)
    with pytest.raises(ValueError, match="a timestamp"):
        OffsetSpec(OffsetKind.TIMESTAMP, values=(("t", 0, 1),))


offsets_json = st.dictionaries(
    st.text(min_size=1, max_size=10),
    st.dictionaries(st.integers(0, 1000).map(str), st.integers(-2, 2**62), min_size=1,
                    max_size=5),
    min_size=1, max_size=4)


@given(offsets_json)
def test_json_round_trip(data):
    spec = parse_offsets_option("startingOffsets", json.dumps(data), is_ending=False)
    assert spec.as_dict() == {(t, int(p)): v for t, parts in data.items()
                              for p, v in parts.items()}


@given(st.text(max_size=60))
def test_arbitrary_text_only_raises_config_error(text):
    for name in ("startingOffsets", "endingOffsets", "startingTimestamp",
                 "endingOffsetsByTimestamp"):
        try:
            spec = parse_offsets_option(name, text, is_ending=name.startswith("ending"))
        except ConfigError:
            continue
        assert isinstance(spec, OffsetSpec)


def test_specs_pickle():
    import pickle

    spec = parse_offsets_option("startingOffsets", '{"t":{"0":1}}', is_ending=False)
    assert pickle.loads(pickle.dumps(spec)) == spec
