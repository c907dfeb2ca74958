"""Field and payload encryption against confluent-kafka's own executor, in both directions.

Records that confluent-kafka's AvroSerializer, JSONSerializer and ProtobufSerializer wrote with an
ENCRYPT rule (local KMS) on tagged fields read back decrypted through decode_column — the read core
of the source and from_registry — equal to the plaintext and to what confluent-kafka's deserializer
reads; records we write with the same rules are decrypted by confluent-kafka's deserializer."""
from __future__ import annotations

import pytest

from tests.unit.contracts.contract_helpers import (
    ROWS,
    Fmt,
    confluent_client,
    ctx,
    encrypt_rule,
    read,
    settings,
    write,
)

from connector.schema import SchemaRequest
from connector.schema._request import InlineSchema, Registration
from connector.testing import RegistryServer

FORMATS = ["avro", "json", "protobuf"]


@pytest.fixture()
def server():
    with RegistryServer() as srv:
        yield srv


def _written(srv, fmt: Fmt, topic="t", rules=None, encoding=(), meta=None, rows=None):
    client = confluent_client(srv.url)
    fmt.register(client, f"{topic}-value", rules if rules is not None else [encrypt_rule()], encoding, meta)
    ser = fmt.serializer(client)
    return [ser(fmt.obj(r), ctx(topic)) for r in (rows or ROWS[fmt.name])]


def _plain(fmt: Fmt, rows):
    return [fmt.plain(fmt.obj(r)) for r in rows]


@pytest.mark.parametrize("name", FORMATS)
def test_records_confluent_encrypted_read_back_decrypted(server, name):
    fmt = Fmt(name)
    values = _written(server, fmt)
    rows = ROWS[name]
    # the bytes really hold ciphertext, not the plaintext
    assert all(r["ssn"].encode() not in v for r, v in zip(rows, values) if r["ssn"])
    theirs = [fmt.plain(d) for d in (fmt.deserializer(confluent_client(server.url))(v, ctx("t")) for v in values)]
    assert theirs == _plain(fmt, rows)
    # reader = the subject's latest (use.latest.version): its rules
    res, reading = read(server.url, values, request=SchemaRequest(subject="t-value", contract=settings()))
    assert reading.rules is not None and reading.rules.reader is not None
    assert res.errors.to_pylist() == [None] * len(rows)
    assert [{k: v for k, v in r.items()} for r in res.values.to_pylist()] == theirs


@pytest.mark.parametrize("name", ["avro", "json"])
def test_inline_reader_applies_the_writers_rules(server, name):
    """A reader that is no registry schema (the document's, an inline one): each writer's own rules
    apply, as confluent-kafka's deserializer without use.latest.version."""
    fmt = Fmt(name)
    values = _written(server, fmt)
    request = SchemaRequest(inline=InlineSchema.of(fmt.text, name), contract=settings())
    res, reading = read(server.url, values, request=request)
    assert reading.rules is not None and reading.rules.reader is None
    assert res.values.to_pylist() == _plain(fmt, ROWS[name])


def test_without_the_secret_ciphertext_passes_through_as_confluent_does(server):
    """onFailure "ERROR,NONE": a read that cannot decrypt keeps the ciphertext (NONE), as
    confluent-kafka's deserializer does when its encryption executor cannot run. (Its local KMS
    client is process-global in Tink: once any test registered the right secret, a wrong one is not
    even asked, so the comparison uses a deserializer without the executor.)"""
    from confluent_kafka.schema_registry.rule_registry import RuleRegistry

    fmt = Fmt("avro")
    values = _written(server, fmt)
    theirs = [fmt.deserializer(confluent_client(server.url), rule_registry=RuleRegistry())(v, ctx("t"))
              for v in values]
    res, _ = read(server.url, values, request=SchemaRequest(subject="t-value", contract=settings("wrong")))
    assert res.errors.to_pylist() == [None] * 3
    assert res.values.to_pylist() == theirs
    assert theirs[0]["ssn"] != ROWS["avro"][0]["ssn"] and theirs[0]["name"] == "ann"


def test_error_action_makes_row_errors(server):
    fmt = Fmt("avro")
    values = _written(server, fmt, rules=[encrypt_rule(on_failure="ERROR")])
    from confluent_kafka.schema_registry.rule_registry import RuleRegistry
    from confluent_kafka.serialization import SerializationError

    with pytest.raises(SerializationError):
        fmt.deserializer(confluent_client(server.url), rule_registry=RuleRegistry())(values[0], ctx("t"))
    res, _ = read(server.url, values, request=SchemaRequest(subject="t-value", contract=settings("not-it-42")))
    errors = res.errors.to_pylist()
    assert all(e and "encryptPII" in e and "cannot unwrap DEK version 1" in e for e in errors), errors
    assert res.values.null_count == 3
    assert "not-it-42" not in " ".join(errors) and "s3cret" not in " ".join(errors)


def test_rules_off_is_explicit_and_reads_ciphertext(server, caplog):
    fmt = Fmt("avro")
    values = _written(server, fmt)
    off = settings()
    import dataclasses

    res, reading = read(server.url, values,
                        request=SchemaRequest(subject="t-value", contract=dataclasses.replace(off, enabled=False)))
    assert reading.rules is None
    assert res.values.to_pylist()[0]["ssn"] != ROWS["avro"][0]["ssn"]
    assert "rules.enabled=false" in caplog.text


@pytest.mark.parametrize("name", FORMATS)
def test_our_writes_are_decrypted_by_confluent(server, name):
    fmt = Fmt(name)
    client = confluent_client(server.url)
    fmt.register(client, "t-value", [encrypt_rule()])
    out, writer = write(server.url, ROWS[name],
                        request=SchemaRequest(registration=Registration.LATEST, subject="t-value", contract=settings()))
    assert writer.rules is not None
    assert out.error_count == 0
    values = out.values.to_pylist()
    assert all(r["ssn"].encode() not in v for r, v in zip(ROWS[name], values) if r["ssn"])
    deser = fmt.deserializer(client)
    assert [fmt.plain(deser(v, ctx("t"))) for v in values] == _plain(fmt, ROWS[name])
    # and without the executor confluent-kafka sees ciphertext
    from confluent_kafka.schema_registry.rule_registry import RuleRegistry

    blind = fmt.deserializer(confluent_client(server.url), rule_registry=RuleRegistry())
    assert fmt.plain(blind(values[0], ctx("t")))["ssn"] != ROWS[name][0]["ssn"]


@pytest.mark.parametrize("algorithm", ["AES128_GCM", "AES256_SIV"])
def test_other_dek_algorithms_and_rotated_keys(server, algorithm):
    fmt = Fmt("avro")
    rule = encrypt_rule(**{"encrypt.dek.algorithm": algorithm, "encrypt.dek.expiry.days": "1"})
    values = _written(server, fmt, rules=[rule])
    res, _ = read(server.url, values, request=SchemaRequest(subject="t-value", contract=settings()))
    assert res.values.to_pylist() == ROWS["avro"]
    out, _ = write(server.url, ROWS["avro"],
                   request=SchemaRequest(registration=Registration.LATEST, subject="t-value", contract=settings()))
    deser = fmt.deserializer(confluent_client(server.url))
    assert [deser(v, ctx("t")) for v in out.values.to_pylist()] == ROWS["avro"]
    if algorithm == "AES256_SIV":  # deterministic: equal plaintexts, equal ciphertexts
        again, _ = write(server.url, ROWS["avro"][:1], request=SchemaRequest(
            registration=Registration.LATEST, subject="t-value", contract=settings()))
        assert again.values.to_pylist()[0] == out.values.to_pylist()[0]


@pytest.mark.parametrize("name", ["avro", "json"])
def test_payload_encryption_both_ways(server, name):
    fmt = Fmt(name)
    payload_rule = encrypt_rule("encryptPayload", tags=None, rule_type="ENCRYPT_PAYLOAD")
    values = _written(server, fmt, rules=[], encoding=[payload_rule])
    assert b"ann" not in values[0]
    res, _ = read(server.url, values, request=SchemaRequest(subject="t-value", contract=settings()))
    assert res.values.to_pylist() == _plain(fmt, ROWS[name])
    out, _ = write(server.url, ROWS[name],
                   request=SchemaRequest(registration=Registration.LATEST, subject="t-value", contract=settings()))
    assert b"ann" not in out.values.to_pylist()[0]
    deser = fmt.deserializer(confluent_client(server.url))
    assert [deser(v, ctx("t")) for v in out.values.to_pylist()] == _plain(fmt, ROWS[name])


def test_a_dek_is_looked_up_once_per_version(server):
    fmt = Fmt("avro")
    values = _written(server, fmt, rows=ROWS["avro"] * 50)
    server.reset_counts()
    request = SchemaRequest(subject="t-value", contract=settings())
    for _ in range(3):
        res, _ = read(server.url, values, request=request)
        assert res.errors.null_count == len(values)
    assert server.request_count("/dek-registry/v1/keks/kek1/deks") == 1
    assert server.request_count("/dek-registry/v1/keks/kek1", method="GET") <= 2


def test_metadata_tags_select_fields_too(server):
    """Tags given by the schema metadata (wildcards over full names) select fields as inline tags do."""
    fmt = Fmt("json")
    from tests.unit.contracts.contract_helpers import metadata

    rows = ROWS["json"]
    values = _written(server, fmt, rules=[encrypt_rule(tags=("SECRET",))], meta=metadata(tags={"$.name": ["SECRET"]}))
    from confluent_kafka.schema_registry.rule_registry import RuleRegistry

    theirs = [fmt.deserializer(confluent_client(server.url), rule_registry=RuleRegistry())(v, ctx("t"))
              for v in values]
    assert theirs[0]["name"] != "ann" and theirs[0]["ssn"] == "123-45-6789"   # name encrypted, ssn not
    res, _ = read(server.url, values, request=SchemaRequest(subject="t-value", contract=settings()))
    assert res.values.to_pylist() == rows


# A field an ENCRYPT rule selects that is no string or bytes field: confluent-kafka's field
# encryption fails a write of a value there ("type ... not supported for encryption") and leaves
# the field alone on read.
SCORED = {"type": "record", "name": "Scored", "namespace": "ex", "fields": [
    {"name": "name", "type": "string"},
    {"name": "ssn", "type": "string", "confluent:tags": ["PII"]},
    {"name": "score", "type": ["null", "int"], "confluent:tags": ["PII", "NUM"]}]}
SCORED_ROWS = [{"name": "ann", "ssn": "123-45-6789", "score": 7}, {"name": "bob", "ssn": "987-65-4321", "score": None},
               {"name": "cy", "ssn": "555", "score": 0}]


def _register_scored(srv, rule) -> int:
    import json

    from confluent_kafka.schema_registry import Schema as CSchema
    from confluent_kafka.schema_registry.schema_registry_client import RuleSet

    return confluent_client(srv.url).register_schema(
        "t-value", CSchema(json.dumps(SCORED), "AVRO", [], None, RuleSet(None, [rule], None)))


def test_write_fails_the_rows_with_a_value_in_a_selected_non_string_field(server):
    import json

    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import SerializationError

    from tests.unit.contracts.contract_helpers import RULE_CONF, rule_registry

    _register_scored(server, encrypt_rule(on_failure="ERROR"))
    out, _ = write(server.url, SCORED_ROWS,
                   request=SchemaRequest(registration=Registration.LATEST, subject="t-value", contract=settings()))
    errors = out.errors.to_pylist()
    assert errors[1] is None
    for e in (errors[0], errors[2]):   # 0 is a value too: only a null is no value
        assert e and "encryptPII" in e and "field ex.Scored.score: type INT not supported for encryption" in e, e
    # as confluent-kafka's serializer: the rows with a score fail, the other is written encrypted
    ser = AvroSerializer(confluent_client(server.url), json.dumps(SCORED), rule_conf=RULE_CONF,
                         rule_registry=rule_registry(), conf={"auto.register.schemas": False, "use.latest.version": True})
    with pytest.raises(SerializationError):   # (its message is empty)
        ser(SCORED_ROWS[0], ctx("t"))
    written = out.values.to_pylist()[1]
    assert b"987-65-4321" not in written
    assert Fmt("avro").deserializer(confluent_client(server.url))(written, ctx("t")) == SCORED_ROWS[1]


def test_read_leaves_a_selected_non_string_field_alone(server):
    """Records whose ``score`` (int, selected by the rule's tag) holds plain values read back as
    they are, without row errors even with onFailure ERROR, as confluent-kafka's deserializer reads them."""
    import io
    import json

    import fastavro

    schema_id = _register_scored(server, encrypt_rule(tags=("NUM",), on_failure="ERROR"))
    parsed = fastavro.parse_schema(json.loads(json.dumps(SCORED)))
    values = []
    for row in SCORED_ROWS:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, row)
        values.append(b"\x00" + schema_id.to_bytes(4, "big") + buf.getvalue())
    theirs = [Fmt("avro").deserializer(confluent_client(server.url))(v, ctx("t")) for v in values]
    assert theirs == SCORED_ROWS
    res, reading = read(server.url, values, request=SchemaRequest(subject="t-value", contract=settings()))
    assert reading.rules is not None
    assert res.errors.to_pylist() == [None] * len(values)
    assert res.values.to_pylist() == SCORED_ROWS
