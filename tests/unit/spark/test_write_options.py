"""Write options: one table with the reader's, direction-checked, typed on the driver."""
import pickle

import pytest

from connector.errors import ConfigError
from connector.options._table import OPTION_DOCS, READ_ONLY_OPTIONS, WRITE_ONLY_OPTIONS
from connector.options._parse import parse_options
from connector.schema._subjects import record_name

BASE = {"asyncapi": "doc.yaml", "channel": "orders"}


def test_every_directional_option_is_documented():
    assert READ_ONLY_OPTIONS <= set(OPTION_DOCS) and WRITE_ONLY_OPTIONS <= set(OPTION_DOCS)
    assert not READ_ONLY_OPTIONS & WRITE_ONLY_OPTIONS
    assert all(OPTION_DOCS[n][1].startswith("Write only") for n in WRITE_ONLY_OPTIONS)


def test_write_options_are_typed():
    o = parse_options({**BASE, "auto.register.schemas": "TRUE", "normalize.schemas": "true",
                       "createTopics": "true", "topic": " orders.eu ", "glue.compression": "ZLIB"},
                      direction="write")
    assert (o.auto_register, o.normalize_schemas, o.create_topics, o.topic, o.glue_compression) == \
        (True, True, True, "orders.eu", "zlib")
    assert o.direction == "write"
    assert pickle.loads(pickle.dumps(o)) == o


@pytest.mark.parametrize("value, want", [("42", "42"), ("0BADC0DE-0000-4000-8000-000000000000",
                                                         "0badc0de-0000-4000-8000-000000000000")])
def test_use_schema_id_takes_ints_and_uuids(value, want):
    assert parse_options({**BASE, "use.schema.id": value}, direction="write").use_schema_id == want


def test_use_schema_id_refuses_anything_else():
    with pytest.raises(ConfigError, match="use.schema.id"):
        parse_options({**BASE, "use.schema.id": "latest"}, direction="write")


def test_two_registration_modes_are_refused():
    with pytest.raises(ConfigError, match="give one"):
        parse_options({**BASE, "auto.register.schemas": "true", "use.latest.version": "true"}, direction="write")


@pytest.mark.parametrize("name", ["startingOffsets", "mode", "includeHeaders", "maxOffsetsPerTrigger"])
def test_read_only_options_are_refused_on_writes(name):
    with pytest.raises(ConfigError, match="reads only"):
        parse_options({**BASE, name: "x"}, direction="write")


@pytest.mark.parametrize("name", sorted(WRITE_ONLY_OPTIONS))
def test_write_only_options_are_refused_on_reads(name):
    with pytest.raises(ConfigError, match="writes only"):
        parse_options({**BASE, name: "true"})


@pytest.mark.parametrize("setting", ["acks", "enable.idempotence", "transactional.id", "value.serializer"])
def test_producer_owned_settings_are_refused_with_a_reason(setting):
    """The conf builder owns the refusal (reads, writes and the CLI all build through it)."""
    from connector.kafka import OWNED_PRODUCER_SETTINGS, kafka_conf_from_options

    opts = parse_options({**BASE, f"kafka.{setting}": "1"}, direction="write")
    with pytest.raises(ConfigError, match="not supported: .*"):
        kafka_conf_from_options(opts.kafka_settings(), bootstrap_servers="b:9092", owned=OWNED_PRODUCER_SETTINGS)


def test_consumer_owned_settings_do_not_concern_writes():
    o = parse_options({**BASE, "kafka.group.id": "g", "kafka.linger.ms": "20"}, direction="write")
    assert dict(o.kafka) == {"group.id": "g", "linger.ms": "20"}


def test_producer_secrets_stay_out_of_repr():
    o = parse_options({**BASE, "kafka.sasl.password": "hunter2"}, direction="write")
    assert "hunter2" not in repr(o) and o.kafka_settings()["sasl.password"] == "hunter2"


def test_checkpoint_location_is_sparks_not_ours():
    assert parse_options({**BASE, "checkpointLocation": "/tmp/x"}, direction="write").asyncapi == "doc.yaml"


class _Spec:
    def __init__(self, fmt, text, message_name=None):
        self.format, self.text, self.message_name = fmt, text, message_name


@pytest.mark.parametrize("spec, want", [
    (_Spec("avro", '{"type": "record", "name": "Order", "namespace": "shop", "fields": []}'), "shop.Order"),
    (_Spec("avro", '{"type": "record", "name": "a.b.Order", "fields": []}'), "a.b.Order"),
    (_Spec("json", '{"title": "Order", "type": "object"}'), "Order"),
    (_Spec("protobuf", 'syntax = "proto3";\npackage shop;\nmessage Order { int64 id = 1; }'), "shop.Order"),
    (_Spec("protobuf", 'syntax = "proto3";\nmessage A {}\nmessage B {}', "B"), "B"),
])
def test_record_name_for_record_strategies(spec, want):
    assert record_name(spec) == want


def test_invalid_producer_setting_error_hides_secret_values():
    from connector.kafka._produce import BatchProducer

    with pytest.raises(ConfigError) as info:
        BatchProducer({"bootstrap.servers": "127.0.0.1:9", "sasl.password": "hunter2", "linger.ms": "hunter2"})
    assert "hunter2" not in str(info.value) and info.value.__cause__ is None
