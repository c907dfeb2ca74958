"""The data-contract parts of the options, the registry client and the schema layer: what is
refused at load(), dead-letter records of writes, shared KEKs, the registry's new endpoints."""
from __future__ import annotations

import copy
import json

import pytest

from tests.unit.contracts.contract_helpers import (
    ROWS,
    SECRET,
    Fmt,
    cel_rule,
    confluent_client,
    ctx,
    encrypt_rule,
    metadata,
    read,
    rule_registry,
    settings,
    write,
)

from confluent_kafka.schema_registry.schema_registry_client import RuleMode
from confluent_kafka.serialization import SerializationError

from connector.errors import ConfigError
from connector.options._parse import parse_options
from connector.schema import SchemaRequest
from connector.schema._request import Registration
from connector.testing import RegistryServer
from registry import RegistryConfig, SchemaNotFound, client_for
from registry._dek import DekRegistry

BASE = {"asyncapi": "doc.yaml", "channel": "orders"}


@pytest.fixture()
def server():
    with RegistryServer() as srv:
        yield srv


def test_options_become_the_requests_contract():
    opts = parse_options({**BASE, "rules.secret": "kms-s3cret", "rules.profile": "prod", "rules.enabled": "false",
                          "use.latest.with.metadata": '{"major_version": "2", "app": "x"}', "rules.dlq.topic": "dlq"})
    request = SchemaRequest.from_options(opts)
    assert request.contract.enabled is False and request.contract.dlq_topic == "dlq"
    assert request.contract.kms.as_dict() == {"secret": "kms-s3cret", "profile": "prod"}
    assert request.use_latest_with_metadata == (("app", "x"), ("major_version", "2"))
    assert "kms-s3cret" not in repr(opts) + repr(request)
    assert parse_options({**BASE, "use.latest.with.metadata": "major_version=1"}).use_latest_with_metadata == \
        (("major_version", "1"),)
    with pytest.raises(ConfigError, match="use.latest.version.*use.latest.with.metadata|each choose"):
        parse_options({**BASE, "use.latest.version": "true", "use.latest.with.metadata": "a=b"}, direction="write")
    with pytest.raises(ConfigError, match="use.latest.with.metadata"):
        parse_options({**BASE, "use.latest.with.metadata": "{}"})


def test_registry_reads_contracts_and_chooses_by_metadata(server):
    client = confluent_client(server.url)
    fmt = Fmt("avro")
    fmt.register(client, "t-value", [encrypt_rule()], meta=metadata({"major_version": "1"}))
    sid2 = fmt.register(client, "t-value", [], meta=metadata({"major_version": "2"}, {"**.name": ["PII"]}))
    ours = client_for(RegistryConfig(urls=(server.url,)))
    v1 = ours.get_latest_with_metadata("t-value", {"major_version": "1"})
    assert v1.version == 1 and v1.rule_set.domain_rules[0].type == "ENCRYPT"
    assert v1.rule_set.domain_rules[0].param("encrypt.kek.name") == "kek1"
    v2 = ours.get_schema_by_id(sid2)
    assert v2.metadata.property("major_version") == "2" and dict(v2.metadata.tags) == {"**.name": ("PII",)}
    assert ours.version_of("t-value", v2) == 2
    with pytest.raises(SchemaNotFound):
        ours.get_latest_with_metadata("t-value", {"major_version": "3"})
    with pytest.raises(SchemaNotFound):
        DekRegistry(RegistryConfig(urls=(server.url,))).get_kek("nope")


def test_a_dlq_rule_without_a_topic_or_cluster_is_refused_at_load(server):
    fmt = Fmt("avro")
    fmt.register(confluent_client(server.url), "t-value", [cel_rule("adults", "message.age >= 18", on_failure="DLQ")])
    request = SchemaRequest(subject="t-value", contract=settings())
    with pytest.raises(ConfigError, match="names no topic: set the option 'rules.dlq.topic'"):
        read(server.url, [], request=request)
    request = SchemaRequest(subject="t-value", contract=settings(dlq_topic="dlq"))
    with pytest.raises(ConfigError, match="no Kafka cluster"):
        read(server.url, [], request=request)


@pytest.mark.kafka
def test_dlq_on_write_leaves_the_record_out_and_sends_it_redacted_as_confluent_does(server, kafka):
    from confluent_kafka.schema_registry.rules.dlq.dlq_action import DlqAction

    from tests.unit.contracts.test_contracts_conditions import _consume

    fmt = Fmt("avro")
    client = confluent_client(server.url)
    rules = [encrypt_rule(), cel_rule("adults", "message.age >= 18", mode=RuleMode.WRITE, on_failure="DLQ",
                                      params={"dlq.topic": "wdlq-theirs"})]
    fmt.register(client, "t-value", rules)
    action = DlqAction({"bootstrap.servers": kafka.bootstrap_servers, "dlq.auto.flush": "true"})
    ser = fmt.serializer(client, rule_registry=rule_registry(dlq=action))
    refused = []
    for r in ROWS["avro"]:
        try:
            ser(copy.deepcopy(r), ctx("t"))
            refused.append(False)
        except SerializationError:
            refused.append(True)
    action.close()
    contract = settings(dlq_topic="wdlq-ours").with_producer({"bootstrap.servers": kafka.bootstrap_servers})
    out, _ = write(server.url, ROWS["avro"], request=SchemaRequest(registration=Registration.LATEST,
                                                                   subject="t-value", contract=contract))
    assert out.dropped is not None and out.dropped.tolist() == refused and any(refused)
    assert [v is None for v in out.values.to_pylist()] == refused
    theirs = _consume(kafka, "wdlq-theirs", sum(refused))
    ours = _consume(kafka, "wdlq-ours", sum(refused))
    assert [json.loads(v) for v, _ in ours] == [json.loads(v) for v, _ in theirs]
    assert json.loads(ours[0][0])["ssn"] == "<REDACTED>"
    assert ours[0][1]["__rule.name"] == theirs[0][1]["__rule.name"] == b"adults"
    assert ours[0][1]["__rule.mode"] == b"WRITE"


def test_shared_kek_deks_are_made_by_the_registry(server):
    from connector.schema.rules._crypto import local_kms_dek_maker

    with RegistryServer(shared_kek_wrapper=local_kms_dek_maker(SECRET)) as srv:
        DekRegistry(RegistryConfig(urls=(srv.url,))).register_kek("kek1", "local-kms", "mykey", shared=True)
        fmt = Fmt("json")
        client = confluent_client(srv.url)
        fmt.register(client, "t-value", [encrypt_rule()])
        out, _ = write(srv.url, ROWS["json"], request=SchemaRequest(registration=Registration.LATEST,
                                                                    subject="t-value", contract=settings(None)))
        assert out.error_count == 0
        deser = fmt.deserializer(client)
        assert [deser(v, ctx("t")) for v in out.values.to_pylist()] == ROWS["json"]
        # no KMS secret needed on our side: the registry unwraps shared DEKs
        res, _ = read(srv.url, out.values.to_pylist(), request=SchemaRequest(subject="t-value",
                                                                             contract=settings(None)))
        assert res.values.to_pylist() == ROWS["json"]


@pytest.mark.kafka
def test_the_sink_leaves_dlq_records_out_of_the_batch(server, kafka):
    """The sink's batch encoder (what each write task runs): records a rule sent to the DLQ are not
    produced, the others are, and the batch does not fail."""
    import pyarrow as pa

    from connector.write import WriteSetup, encode_batch
    from connector.write._types import Encoding, EncodingMode
    from connector.schema import value_writer
    from wireformat import Framing

    fmt = Fmt("avro")
    fmt.register(confluent_client(server.url), "t-value",
                 [cel_rule("adults", "message.age >= 18", mode=RuleMode.WRITE, on_failure="DLQ",
                           params={"dlq.topic": "sink-dlq"})])
    contract = settings().with_producer({"bootstrap.servers": kafka.bootstrap_servers})
    writer = value_writer(SchemaRequest(registration=Registration.LATEST, subject="t-value", contract=contract),
                          plan=None, registry=RegistryConfig(urls=(server.url,)), framing=Framing.CONFLUENT, topic="t")
    setup = WriteSetup(options=None, plan=None, value=Encoding(EncodingMode.ENCODE, writer),
                       key=Encoding(EncodingMode.BYTES), value_column="value", value_fields=(), has_headers=False,
                       has_partition=False, topic="t", topic_column=False, address_parts=(), base_kafka=())
    batch = pa.RecordBatch.from_pydict({"value": pa.array(ROWS["avro"], writer.encoder.arrow_type),
                                        "key": pa.array([b"k1", b"k2", b"k3"])})
    topics, values, keys, partitions, headers, _ = encode_batch(setup, batch)
    kept = [r for r in ROWS["avro"] if r["age"] >= 18]
    assert len(values) == len(keys) == len(kept) == 2 and keys.to_pylist() == [b"k1", b"k3"]
    deser = fmt.deserializer(confluent_client(server.url))
    assert [deser(v, ctx("t")) for v in values.to_pylist()] == kept
    from tests.unit.contracts.test_contracts_conditions import _consume

    sent = _consume(kafka, "sink-dlq", 1)
    assert len(sent) == 1 and json.loads(sent[0][0])["name"] == "bob"
