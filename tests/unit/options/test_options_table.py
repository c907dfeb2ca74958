"""The option table: each option's parser, scope and secrecy; offsets typed once at parse time."""
from __future__ import annotations

import dataclasses
import json
import logging
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connector.errors import ConfigError
from connector.options import SourceOptions, parse_any
from connector.options._table import OPTIONS, lookup
from connector.options._parse import is_secret_option, parse_options

BASE = {"asyncapi": "doc.yaml", "channel": "orders"}

# A valid value for every named option (families get a member), so each can be tried in every scope.
SAMPLE = {
    "asyncapi": "doc.yaml", "asyncapi.allowremoterefs": "true", "asyncapi.refroot": "/tmp",
    "channel": "orders", "operation": "op", "message": "m", "server": "prod", "topic": "t",
    "channel.param.<name>": "eu", "kafka.bootstrap.servers": "b:9092", "kafka.<librdkafka setting>": "5",
    "startingoffsets": '{"t":{"0":5}}', "endingoffsets": '{"t":{"0":9}}', "startingtimestamp": "1000",
    "endingtimestamp": "2000", "startingoffsetsbytimestamp": '{"t":{"0":1000}}',
    "endingoffsetsbytimestamp": '{"t":{"0":2000}}', "startingoffsetsbytimestampstrategy": "latest",
    "failondataloss": "false", "minpartitions": "3", "maxrecordsperpartition": "10", "minrecordsperpartition": "20000",
    "maxoffsetspertrigger": "10", "minoffsetspertrigger": "5", "maxtriggerdelay": "30s",
    "includeheaders": "true", "groupidprefix": "me", "commitoffsetstogroup": "true",
    "kafkaconsumer.polltimeoutms": "1000", "fetchoffset.timeoutms": "1000", "fetchoffset.numretries": "2",
    "fetchoffset.retryintervalms": "50", "maxbatchrows": "100",
    "mode": "permissive", "wireformat": "confluent", "key.decode": "false", "valueshape": "flatten",
    "enumsasints": "true", "recursiondepth": "2", "jsonschemavalidation": "false", "schemaevolutionmode": "rescue",
    "schema.subject": "s",
    "schema.version": "3", "schema.id": "7", "schema.subject.strategy": "RecordNameStrategy",
    "schema.message": "shop.Refund", "limits.maxrecordbytes": "1000", "limits.maxdecompressedbytes": "2000",
    "limits.maxcollectionitems": "3000",
    "createtopics": "true", "auto.register.schemas": "true", "use.latest.version": "true",
    "use.schema.id": "12", "normalize.schemas": "true", "glue.compression": "zlib", "checkpointlocation": "/tmp/c",
    "queryname": "publish_paid_orders",
    "rules.enabled": "false", "use.latest.with.metadata": "major_version=2", "rules.dlq.topic": "dlq",
    "rules.<kms setting>": "prod",
    "deliveryguarantee": "exactly-once", "transactionalidprefix": "etl", "writeid": "backfill-1",
    # column functions only
    "schema": '"string"', "schema.format": "avro", "witherrors": "true",
}
JOBS = {"batch": {"streaming": False, "direction": "read"}, "stream": {"streaming": True, "direction": "read"},
        "write": {"streaming": False, "direction": "write"}}


def _name_for(o) -> str:
    return {"channel.param.<name>": "channel.param.region",
            "kafka.<librdkafka setting>": "kafka.linger.ms", "rules.<kms setting>": "rules.profile"}.get(o.key, o.key)


def _case(o, job):
    return pytest.param(o, job, id=f"{o.key}-{job}")


PLAIN = [o for o in OPTIONS if not o.key.startswith("schema.registry.")]


def test_table_is_consistent():
    from registry._config import REGISTRY_OPTION_NAMES, SECRET_OPTION_NAMES

    keys = [o.key for o in OPTIONS]
    assert len(keys) == len(set(keys))
    fields = {f.name for f in dataclasses.fields(SourceOptions)}
    assert all(o.field is None or o.field in fields for o in OPTIONS)
    registry = {o.key for o in OPTIONS if o.key.startswith("schema.registry.")}
    assert registry == set(REGISTRY_OPTION_NAMES)  # every spelling the registry config takes, and no other
    assert {o.key for o in OPTIONS if o.secret} == set(SECRET_OPTION_NAMES)
    assert set(SAMPLE) == {o.key for o in PLAIN}
    assert all(o.doc or o.hidden for o in OPTIONS)


@pytest.mark.parametrize("opt, job", [_case(o, j) for o in PLAIN for j in JOBS])
def test_each_option_is_accepted_in_its_scope_and_refused_outside(opt, job):
    options = {**BASE, _name_for(opt): SAMPLE[opt.key]}
    if opt.key in ("schema.id", "schema.subject"):
        options.pop("schema.subject" if opt.key == "schema.id" else "schema.id", None)
    if job in opt.scope:
        parsed = parse_options(options, **JOBS[job])
        assert opt.key in parsed.given
        return
    with pytest.raises(ConfigError) as e:
        parse_options(options, **JOBS[job])
    message = str(e.value)
    assert f"'{opt.key}'" in message
    expected = {"write": "reads only", "stream": "a stream has no end", "batch": "streaming reads only"}[job]
    jobs = opt.scope & set(JOBS)
    if job != "write" and jobs == {"write"}:
        expected = "writes only"
    if not jobs:
        expected = "jobs do not accept it"
    assert expected in message


def test_scope_is_checked_before_the_value_on_writes():
    with pytest.raises(ConfigError, match="reads only"):
        parse_options({**BASE, "startingOffsets": "not offsets"}, direction="write")


@pytest.mark.parametrize("name, value, fragment", [
    ("failOnDataLoss", "maybe", "must be true or false"),
    ("minPartitions", "0", "'minpartitions' must be >= 1"),
    ("maxBatchRows", "ten", "must be an integer"),
    ("recursionDepth", "-1", "must be >= 0"),
    ("maxTriggerDelay", "soon", "must be a duration"),
    ("mode", "lenient", "option 'mode' must be one of FAILFAST, PERMISSIVE, DROPMALFORMED"),
    ("valueShape", "wide", "option 'valueShape' must be one of struct, flatten"),
    ("schemaEvolutionMode", "merge", "must be one of none, rescue, failOnNewFields"),
    ("wireFormat", "bogus", "option 'wireFormat' must be one of"),
    ("startingOffsetsByTimestampStrategy", "first", "must be 'error' or 'latest'"),
    ("schema.version", "newest", "must be an integer"),
    ("startingOffsets", "sometime", "startingoffsets"),
    ("startingOffsets", '{"t":{"0":-3}}', "use -2 for earliest"),
    ("startingTimestamp", "yesterday", "startingtimestamp"),
    ("startingOffsetsByTimestamp", "[1]", "startingoffsetsbytimestamp"),
])
def test_each_parser_names_the_option_in_its_error(name, value, fragment):
    with pytest.raises(ConfigError) as e:
        parse_any({**BASE, name: value})
    assert fragment in str(e.value)


@pytest.mark.parametrize("name, value, fragment", [
    ("use.schema.id", "latest", "schema version UUID"),
    ("glue.compression", "gzip", "must be none or zlib"),
    ("createTopics", "sure", "must be true or false"),
])
def test_write_parsers_name_the_option_in_their_error(name, value, fragment):
    with pytest.raises(ConfigError, match=fragment):
        parse_options({**BASE, name: value}, direction="write")


def test_typed_values():
    o = parse_options({**BASE, "maxTriggerDelay": "2m", "mode": "dropmalformed", "wireFormat": "GLUE",
                       "schemaEvolutionMode": "FAILONNEWFIELDS", "asyncapi.refRoot": "~/x",
                       "channel.param.Region": "eu", "kafka.Linger.Ms": "5", "minPartitions": " 4 "},
                      streaming=True)
    assert o.max_trigger_delay_ms == 120_000 and o.mode == "DROPMALFORMED" and o.wire_format == "glue"
    assert o.evolution_mode == "failOnNewFields" and o.ref_root.endswith("/x") and not o.ref_root.startswith("~")
    assert o.channel_params == (("region", "eu"),) and o.kafka == (("linger.ms", "5"),) and o.min_partitions == 4
    w = parse_options({**BASE, "use.schema.id": "8F3C1E7A-0000-4000-8000-000000000001"}, direction="write")
    assert w.use_schema_id == "8f3c1e7a-0000-4000-8000-000000000001"


def test_blank_values_are_unset():
    assert parse_options({**BASE, "mode": "  ", "minPartitions": ""}).mode == "FAILFAST"


def test_required_options():
    with pytest.raises(ConfigError, match="'asyncapi' is required"):
        parse_any({"channel": "c"})
    with pytest.raises(ConfigError, match="'channel', 'operation' or 'message' is required"):
        parse_any({"asyncapi": "x"})


@pytest.mark.parametrize("typo, suggestion", [("startingofsets", "startingoffsets"), ("moed", "mode"),
                                              ("schema.registry.ulr", "schema.registry.url"),
                                              ("includeheader", "includeheaders")])
def test_unknown_options_suggest_the_closest(typo, suggestion):
    with pytest.raises(ConfigError) as e:
        parse_any({**BASE, typo: "x"})
    assert f"unknown option '{typo}'" in str(e.value) and f"Did you mean '{suggestion}'?" in str(e.value)
    assert "checkpointlocation" not in str(e.value)  # accepted on writes, never advertised


def test_lookup_knows_families_but_not_their_bare_prefix():
    assert lookup("kafka.acks").key == "kafka.<librdkafka setting>"
    assert lookup("kafka.bootstrap.servers").key == "kafka.bootstrap.servers"
    assert lookup("kafka.") is None and lookup("schema.registry.nope") is None


# -- secrets ---------------------------------------------------------------------------------------
SECRET_VALUES = {
    "kafka.sasl.password": "kpw-1", "kafka.ssl.key.password": "kpw-2", "kafka.sasl.jaas.config": "kpw-3",
    "kafka.ssl.some.future.password": "kpw-4",  # the suffix rule of the one classifier
    "schema.registry.basic.auth.username": "alice", "schema.registry.basic.auth.password": "rpw-1",
    "schema.registry.bearer.auth.token": "rpw-2", "schema.registry.ssl.key.password": "rpw-3",
    "schema.registry.glue.access.key.id": "rpw-4", "schema.registry.glue.secret.access.key": "rpw-5",
    "schema.registry.glue.session.token": "rpw-6",
    # KMS credentials of data-contract rules (confluent-kafka's rule-config names)
    "rules.secret": "kms-1", "rules.secret.access.key": "kms-2", "rules.client.secret": "kms-3",
    "rules.private.key": "kms-4", "rules.token": "kms-5",
}


@pytest.mark.parametrize("direction", ["read", "write"])
def test_secrets_never_in_repr_str_or_given(direction):
    o = parse_options({**BASE, **SECRET_VALUES}, direction=direction)
    shown = repr(o) + str(o) + repr(o.secrets) + str(o.given) + repr(o.kafka) + repr(o.registry)
    for name, value in SECRET_VALUES.items():
        if name.endswith("username"):
            continue
        assert is_secret_option(name), name
        assert value not in shown, name
    settings = o.kafka_settings()
    assert settings["sasl.password"] == "kpw-1" and settings["ssl.some.future.password"] == "kpw-4"
    assert o.registry_options()["schema.registry.glue.session.token"] == "rpw-6"
    assert o.rule_settings()["secret"] == "kms-1" and o.rule_settings()["token"] == "kms-5"
    clone = pickle.loads(pickle.dumps(o))  # travels to executors whole
    assert clone == o and "kpw-1" not in repr(clone)


def test_one_secret_classifier_for_options_and_conf():
    from connector.kafka import is_secret_setting
    from connector.kafka._conf import SECRET_KAFKA_SETTINGS

    for setting in SECRET_KAFKA_SETTINGS | {"ssl.truststore.password", "x.private.key.pem"}:
        assert is_secret_option("kafka." + setting) == is_secret_setting(setting) is True
    assert not is_secret_option("kafka.sasl.username") and not is_secret_option("schema.registry.url")


# -- offsets: parsed once, defaults resolved by scope -------------------------------------------------
def test_offsets_are_typed_at_parse_and_defaults_follow_the_scope():
    any_ = parse_any(BASE)
    assert any_.starting is None and any_.ending is None
    batch = any_.for_scope(streaming=False)
    assert (batch.starting.kind, batch.ending.kind, batch.ending.is_ending) == ("earliest", "latest", True)
    stream = any_.for_scope(streaming=True)
    assert stream.starting.kind == "latest" and stream.ending is None
    assert any_.for_scope(streaming=None).starting is None
    assert batch.for_scope(streaming=False) == batch  # idempotent
    with pytest.raises(ValueError, match="already scoped"):
        batch.for_scope(streaming=True)  # would keep the batch default (earliest) on a stream


def test_spark_precedence_and_strategy():
    o = parse_options({**BASE, "startingOffsets": "earliest", "startingOffsetsByTimestamp": '{"t":{"0":5}}',
                       "startingTimestamp": "1000", "startingOffsetsByTimestampStrategy": "latest",
                       "endingOffsets": '{"t":{"0":9}}', "endingOffsetsByTimestamp": '{"t":{"0":7}}'})
    assert (o.starting.kind, o.starting.timestamp, o.starting.strategy) == ("timestamp", 1000, "latest")
    assert o.ending.kind == "timestamps" and o.ending.values == (("t", 0, 7),) and o.ending.strategy == "latest"


def test_a_bad_lower_precedence_offset_option_still_fails():
    with pytest.raises(ConfigError, match="startingoffsets"):
        parse_any({**BASE, "startingTimestamp": "1000", "startingOffsets": "sometime"})


@pytest.mark.parametrize("value", ["latest", '{"t":{"0":-1}}'])
def test_batch_refuses_a_latest_start_streams_accept_it(value):
    o = parse_any({**BASE, "startingOffsets": value})
    with pytest.raises(ConfigError, match="can't be latest for batch"):
        o.for_scope(streaming=False)
    assert o.for_scope(streaming=True).starting == o.starting


def test_for_scope_does_not_parse_again(monkeypatch):
    import connector.options._table as table

    o = parse_any({**BASE, "startingOffsets": '{"t":{"0":5}}', "mode": "permissive"})
    monkeypatch.setattr(table, "parse_offsets_option", lambda *a, **k: pytest.fail("reparsed"))
    for streaming in (None, True, False):
        assert o.for_scope(streaming=streaming).starting.values == (("t", 0, 5),)


def test_owned_kafka_settings_are_the_conf_builders_alone():
    """One owner: the option parser passes kafka.* through, the conf builder refuses what the
    reader or the sink owns (with the reason), and load() builds it, so the refusal still comes then."""
    from connector.kafka import OWNED_PRODUCER_SETTINGS, kafka_conf_from_options

    read = parse_options({**BASE, "kafka.group.id": "g"})
    write = parse_options({**BASE, "kafka.acks": "1"}, direction="write")
    assert read.kafka == (("group.id", "g"),) and write.kafka == (("acks", "1"),)
    with pytest.raises(ConfigError, match="'kafka.group.id' is not supported"):
        kafka_conf_from_options(read.kafka_settings(), bootstrap_servers="b:9092")
    with pytest.raises(ConfigError, match="'kafka.acks' is not supported"):
        kafka_conf_from_options(write.kafka_settings(), bootstrap_servers="b:9092", owned=OWNED_PRODUCER_SETTINGS)
    assert kafka_conf_from_options(parse_options({**BASE, "kafka.acks": "1"}).kafka_settings(),
                                   bootstrap_servers="b:9092")["acks"] == "1"


def test_tls_is_not_warned_at_parse(caplog):
    """The one TLS warning is the conf builder's (connector.kafka.warn_insecure_tls)."""
    with caplog.at_level(logging.WARNING):
        parse_options({**BASE, "kafka.ssl.endpoint.identification.algorithm": "none"})
    assert not caplog.records


# -- property tests against a reference ----------------------------------------------------------------

_TOPIC = st.text(alphabet="abcxyz._-", min_size=1, max_size=8)
_PARTS = st.dictionaries(st.integers(0, 1000), st.integers(-2, 2**62), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(_TOPIC, _PARTS, min_size=1, max_size=3))
def test_starting_offsets_json_parses_to_the_reference(offsets):
    text = json.dumps({t: {str(p): o for p, o in parts.items()} for t, parts in offsets.items()})
    spec = parse_any({**BASE, "startingOffsets": text}).starting
    assert spec.kind == "offsets"
    assert spec.values == tuple(sorted((t, p, o) for t, parts in offsets.items() for p, o in parts.items()))
    batch_ok = all(o != -1 for parts in offsets.values() for o in parts.values())
    if batch_ok:
        assert parse_any({**BASE, "startingOffsets": text}).for_scope(streaming=False).starting == spec
    else:
        with pytest.raises(ConfigError):
            parse_any({**BASE, "startingOffsets": text}).for_scope(streaming=False)


@settings(max_examples=80, deadline=None)
@given(st.one_of(st.integers(-5, 10**12).map(str), st.text(max_size=6)), st.sampled_from(["", " ", "\t"]))
def test_integer_options_match_the_reference(value, pad):
    try:
        reference = int(value.strip())
    except ValueError:
        reference = None
    raw = pad + value + pad
    if not raw.strip():
        assert parse_any({**BASE, "maxBatchRows": raw}).max_batch_rows == 10_000
    elif reference is not None and reference >= 1:
        assert parse_any({**BASE, "maxBatchRows": raw}).max_batch_rows == reference
    else:
        with pytest.raises(ConfigError, match="'maxbatchrows' must be"):
            parse_any({**BASE, "maxBatchRows": raw})


def test_source_options_take_every_default_from_the_table():
    """One owner per default: a SourceOptions field whose option has a default value gets it by
    parsing the table's text (``default_of``), never from a literal written a second time."""
    import ast
    import inspect

    from connector.options._parse import SourceOptions as Cls
    from connector.options._table import COLLECTED, default_of

    tree = ast.parse(inspect.getsource(Cls))
    literal = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            v = node.value
            if isinstance(v, ast.Constant) and v.value not in (None, "read", ()):
                literal.append(node.target.id)
            elif isinstance(v, (ast.BinOp, ast.Attribute)):  # 15 * 60 * 1000, Mode.FAILFAST...
                literal.append(node.target.id)
    assert not literal, f"SourceOptions fields with a literal default (use default_of): {literal}"
    for o in OPTIONS:
        if o.field and o.field not in COLLECTED and o.default:
            assert getattr(Cls("doc.yaml"), o.field) == default_of(o.field) == o.parse(o, o.default), o.name
