"""``asyncapi-kafka inspect`` says how a channel of several messages is routed (issue 37): by schema
id, by a type header and its values, by validation, or why ``load()`` refuses it."""
from __future__ import annotations

import json

from tests.unit.decode.routing_helpers import A, B, document, typed

from connector.cli import main

AVRO_A = {"type": "record", "name": "A", "namespace": "ev", "fields": [{"name": "x", "type": "long"}]}
AVRO_B = {"type": "record", "name": "B", "namespace": "ev", "fields": [{"name": "y", "type": "string"}]}
AVRO = "application/vnd.apache.avro+json;version=1.9.0"


def _inspect(tmp_path, capsys, doc: dict, *flags: str):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    code = main(["inspect", str(path), *flags])
    return code, capsys.readouterr().out


def _routing(tmp_path, capsys, doc):
    code, out = _inspect(tmp_path, capsys, doc, "--json")
    assert code == 0
    (channel,) = json.loads(out)["channels"]
    return channel


def test_avro_without_ids_or_type_header_is_shown_as_refused_with_the_reason(tmp_path, capsys):
    channel = _routing(tmp_path, capsys, document({"A": AVRO_A, "B": AVRO_B}, fmt=AVRO))
    assert channel["routing"]["by"] == "refused"
    assert "cannot be told apart by trying the schemas" in channel["routing"]["error"]
    code, out = _inspect(tmp_path, capsys, document({"A": AVRO_A, "B": AVRO_B}, fmt=AVRO))
    assert code == 0 and "routing        refused: channel 'mixed' carries 2 avro messages" in out


def test_avro_with_a_const_header_is_routed_by_it_and_names_the_header_of_each_message(tmp_path, capsys):
    channel = _routing(tmp_path, capsys, document({"A": AVRO_A, "B": AVRO_B}, typed("ce_type", A="a.v1", B="b.v1"),
                                                  fmt=AVRO))
    r = channel["routing"]
    assert r["by"] == "header" and r["otherwise"] == "error"
    (ce,) = [h for h in r["headers"] if h["documented"]]
    assert ce["name"] == "ce_type" and ce["messages"] == {"A": {"values": ["a.v1"], "how": "const"},
                                                          "B": {"values": ["b.v1"], "how": "const"}}
    assert [m["type_header"] for m in channel["messages"]] == [["ce_type", "a.v1"], ["ce_type", "b.v1"]]


def test_json_without_headers_is_routed_by_validation(tmp_path, capsys):
    channel = _routing(tmp_path, capsys, document({"A": A, "B": B}))
    assert channel["routing"]["by"] == "validation" and channel["routing"]["otherwise"] == "validation"
    assert [m["type_header"] for m in channel["messages"]] == [None, None]


def test_a_registry_framing_routes_by_schema_id_and_one_message_needs_no_routing(tmp_path, capsys):
    doc = document({"A": AVRO_A, "B": AVRO_B}, fmt=AVRO)
    doc["servers"] = {"s": {"host": "localhost:9092", "protocol": "kafka",
                            "bindings": {"kafka": {"schemaRegistryUrl": "http://localhost:8081"}}}}
    assert _routing(tmp_path, capsys, doc)["routing"]["by"] == "registry"
    assert _routing(tmp_path, capsys, document({"A": A}))["routing"] is None
