"""Data contracts: decrypt + decode against confluent-kafka's rule-executing deserializer loop.

Records of a 7-field user record (two tagged PII string fields, an ENCRYPT rule with the local
KMS) are written by confluent-kafka's AvroSerializer (and JSONSerializer); both sides read the
same bytes:

- baseline: ``AvroDeserializer`` / ``JSONDeserializer`` with the rule registry (field walk, Tink
  decryption per field, per record), the loop a Python consumer runs;
- ours: ``decode_column`` with the schema layer's rules (vectorized decode, then the tagged
  columns decrypted column-wise, one key per DEK version), Arrow out;
- ours without rules on plaintext records of the same shape (what decryption adds);
- a CEL condition (``message.age >= 18``) on read: ours (Arrow compute) vs the deserializer loop.

Medians of 3 alternating runs in one process. ``python -m benchmarks.contracts_bench [--rows N]``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

DECRYPT_OURS = "contracts avro: ours, decrypt + decode (decode_column + rules)"
DECRYPT_CONFLUENT = "contracts avro: confluent AvroDeserializer loop with ENCRYPT rule"
PLAIN_OURS = "contracts reference: ours, the same record in plaintext, no rules (avro)"
JSON_OURS = "contracts json: ours, decrypt + decode"
JSON_CONFLUENT = "contracts json: confluent JSONDeserializer loop with ENCRYPT rule"
CEL_OURS = "contracts cel: ours, decode + CEL condition (Arrow)"
CEL_CONFLUENT = "contracts cel: confluent AvroDeserializer loop with CEL rule"

SECRET = "bench-secret"
AVRO = {"type": "record", "name": "User", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
    {"name": "email", "type": "string", "confluent:tags": ["PII"]},
    {"name": "ssn", "type": "string", "confluent:tags": ["PII"]},
    {"name": "age", "type": "int"}, {"name": "score", "type": "double"}, {"name": "active", "type": "boolean"}]}
JSON_SCHEMA = {"type": "object", "title": "User", "properties": {
    "id": {"type": "integer"}, "name": {"type": "string"},
    "email": {"type": "string", "confluent:tags": ["PII"]}, "ssn": {"type": "string", "confluent:tags": ["PII"]},
    "age": {"type": "integer"}, "score": {"type": "number"}, "active": {"type": "boolean"}}}


def _records(n: int) -> list[dict]:
    return [{"id": i, "name": f"user{i}", "email": f"user{i}@example.com", "ssn": f"{i % 1000:03d}-{i % 100:02d}-{i:04d}",
             "age": 10 + i % 70, "score": i * 0.5, "active": bool(i % 2)} for i in range(n)]


def _rule_registry():
    from confluent_kafka.schema_registry.rule_registry import RuleRegistry
    from confluent_kafka.schema_registry.rules.cel.cel_executor import CelExecutor
    from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import FieldEncryptionExecutor
    from confluent_kafka.schema_registry.rules.encryption.localkms.local_driver import LocalKmsDriver

    LocalKmsDriver.register()
    rr = RuleRegistry()
    rr.register_executor(FieldEncryptionExecutor())
    rr.register_executor(CelExecutor())
    return rr


def _median_rate(fn, n: int) -> float:
    return n / statistics.median(fn)


def _topic(srv, fmt: str, rule, n: int, sample: int):
    """(records, framed bytes of ``n`` records written by confluent-kafka's serializer): ``sample``
    distinct records (each with its own IVs) repeated to ``n``."""
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.schema_registry.schema_registry_client import RuleSet
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient({"url": srv.url})
    text = json.dumps(AVRO if fmt == "avro" else JSON_SCHEMA)
    subject = f"{fmt}-{rule.type if rule else 'plain'}-value"
    client.register_schema(subject, Schema(text, fmt.upper(), [], None, RuleSet(None, [rule] if rule else None)))
    conf = {"auto.register.schemas": False, "use.latest.version": True}
    kw = {"conf": conf, "rule_conf": {"secret": SECRET}, "rule_registry": _rule_registry()}
    ser = AvroSerializer(client, text, **kw) if fmt == "avro" else JSONSerializer(text, client, **kw)
    ctx = SerializationContext(subject[:-6], MessageField.VALUE)
    recs = _records(sample)
    framed = [ser(dict(r), ctx) for r in recs]
    return client, subject[:-6], (framed * (n // sample + 1))[:n]


def _ours(srv, subject_topic, values):
    import pyarrow as pa

    from connector.formats import decode_column
    from connector.schema import SchemaRequest, value_reading
    from connector.schema.rules import ContractSettings, KmsSettings
    from registry import RegistryConfig, client_for
    from wireformat import Framing

    cfg = RegistryConfig(urls=(srv.url,))
    request = SchemaRequest(subject=f"{subject_topic}-value",
                            contract=ContractSettings(kms=KmsSettings.of({"secret": SECRET})))
    reading = value_reading(request, plan=None, registry=cfg, framing=Framing.CONFLUENT, topic=subject_topic)
    arr = pa.array(values, pa.binary())
    lookup = client_for(cfg).lookup

    def run():
        res = decode_column(arr, framing=Framing.CONFLUENT, decoder=reading.decoder, lookup=lookup,
                            rules=reading.rules, topics=subject_topic)
        assert res.errors.null_count == len(arr) or reading.rules is not None
        return res
    run()  # warm: DEK look-up and unwrap, compiled schema
    return run


def _confluent(client, fmt, topic, values, slow):
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    kw = {"conf": {}, "rule_conf": {"secret": SECRET}, "rule_registry": _rule_registry()}
    deser = AvroDeserializer(client, **kw) if fmt == "avro" else JSONDeserializer(None, schema_registry_client=client,
                                                                                  **kw)
    ctx = SerializationContext(topic, MessageField.VALUE)
    sub = values[:slow]

    def run():
        for v in sub:
            try:
                deser(v, ctx)
            except Exception:  # a failed condition is a raised error: part of the loop's work
                pass
    run()
    return run


def _alternate(pairs: dict, runs: int = 3) -> dict:
    """Medians of ``runs`` alternating timings: name -> (fn, records per call)."""
    times: dict[str, list[float]] = {k: [] for k in pairs}
    for _ in range(runs):
        for name, (fn, _) in pairs.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: n / statistics.median(times[name]) for name, (_, n) in pairs.items()}


def run(n: int = 200_000, slow: int = 10_000, runs: int = 3, out: dict | None = None) -> dict:
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from confluent_kafka.schema_registry.schema_registry_client import Rule, RuleKind, RuleMode, RuleParams

    from connector.testing import RegistryServer

    rates = out if out is not None else {}
    encrypt = Rule("encryptPII", None, RuleKind.TRANSFORM, RuleMode.WRITEREAD, "ENCRYPT", ["PII"],
                   RuleParams({"encrypt.kek.name": "bench-kek", "encrypt.kms.type": "local-kms",
                               "encrypt.kms.key.id": "bench"}), None, None, "ERROR,NONE", False)
    cel = Rule("adults", None, RuleKind.CONDITION, RuleMode.READ, "CEL", None, None, "message.age >= 18", None,
               "NONE", False)
    sample = min(n, 20_000)
    with RegistryServer() as srv:
        client, topic, enc = _topic(srv, "avro", encrypt, n, sample)
        _, ptopic, plain = _topic(srv, "avro", None, n, sample)
        ours, base, plain_ours = _ours(srv, topic, enc), _confluent(client, "avro", topic, enc, slow), \
            _ours(srv, ptopic, plain)
        got = _alternate({DECRYPT_OURS: (ours, n), DECRYPT_CONFLUENT: (base, slow), PLAIN_OURS: (plain_ours, n)}, runs)
        rates.update(got)
        client, jtopic, jenc = _topic(srv, "json", encrypt, n // 4, min(sample, n // 4))
        rates.update(_alternate({JSON_OURS: (_ours(srv, jtopic, jenc), n // 4),
                                 JSON_CONFLUENT: (_confluent(client, "json", jtopic, jenc, slow // 2), slow // 2)},
                                runs))
        client, ctopic, cenc = _topic(srv, "avro", cel, n, sample)
        rates.update(_alternate({CEL_OURS: (_ours(srv, ctopic, cenc), n),
                                 CEL_CONFLUENT: (_confluent(client, "avro", ctopic, cenc, slow), slow)}, runs))
    for k in (DECRYPT_OURS, DECRYPT_CONFLUENT, PLAIN_OURS, JSON_OURS, JSON_CONFLUENT, CEL_OURS, CEL_CONFLUENT):
        if k in rates:
            print(f"  {k:<70} {rates[k]:>12,.0f} rec/s")
    for ours_k, base_k in ((DECRYPT_OURS, DECRYPT_CONFLUENT), (JSON_OURS, JSON_CONFLUENT), (CEL_OURS, CEL_CONFLUENT)):
        if ours_k in rates and base_k in rates:
            print(f"  {ours_k.split(':')[0]}: {rates[ours_k] / rates[base_k]:.1f}x the confluent loop")
    return rates


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--slow", type=int, default=10_000, help="records of each confluent loop run")
    args = ap.parse_args()
    print(f"load average: {os.getloadavg()}")
    run(args.rows, args.slow)
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
