"""``#/...`` references inside a payload that declares ``$id`` resolve as AsyncAPI's official parser
resolves them (issue 34): JSON Schema's own resolution against the ``$id`` base stands where it
finds the target; otherwise the pointer is resolved in the AsyncAPI document, and ``inspect`` says
so. The document is the equivalent of the Spring template's ``map-format.yml`` test mock: a payload
with ``$id: SongMetaData`` whose properties refer to ``#/components/schemas/...``.
"""
from __future__ import annotations

import argparse
import json

import pytest

from connector.asyncapi import load_document, plan_read
from connector.errors import AsyncApiDocumentError


def _doc(tmp_path, extra: dict | None = None, defs: dict | None = None) -> str:
    payload = {"$id": "SongMetaData", "type": "object", "properties": {
        "tags": {"additionalProperties": {"type": "string"}},
        "plays": {"additionalProperties": {"type": "integer", "format": "int64"}},
        "album": {"$ref": "#/components/schemas/Album"},
        "artists": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/Artist"}},
        **(extra or {})}}
    if defs:
        payload["$defs"] = defs
    doc = {"asyncapi": "2.0.0", "info": {"title": "Record label", "version": "1.0.0"},
           "servers": {"production": {"url": "localhost:9092", "protocol": "kafka"}},
           "channels": {"song.metadata": {"subscribe": {"message": {"$ref": "#/components/messages/metadata"}}}},
           "components": {
               "messages": {"metadata": {"payload": payload}},
               "schemas": {
                   "Album": {"type": "object", "properties": {"name": {"type": "string"}, "year": {"type": "integer"}},
                             "additionalProperties": False},
                   "Artist": {"type": "object", "properties": {"name": {"type": "string"}}},
                   "Local": {"type": "object", "properties": {"from_document": {"type": "string"}}}}}}
    path = tmp_path / "map-format.yml"
    path.write_text(json.dumps(doc, indent=2))  # JSON is YAML
    return str(path)


def _payload(path: str):
    [message] = plan_read(load_document(path), channel="song.metadata").value_messages
    return message.payload


def test_the_spring_map_format_document_plans_with_the_documents_schemas(tmp_path):
    from pyspark.sql.pandas.types import from_arrow_type

    from connector.schema import decoder_for

    spec = _payload(_doc(tmp_path))
    props = json.loads(spec.text)["properties"]
    assert props["album"] == {"type": "object", "properties": {"name": {"type": "string"}, "year": {"type": "integer"}},
                              "additionalProperties": False}
    assert props["artists"]["additionalProperties"] == {"type": "object", "properties": {"name": {"type": "string"}}}
    assert any("'#/components/schemas/Album'" in n and "AsyncAPI document" in n for n in spec.notes)
    # (tags and plays declare no type, as in the template: the JSON Schema format keeps them as JSON text)
    assert from_arrow_type(decoder_for(spec).arrow_type).simpleString() == (
        "struct<tags:string,plays:string,album:struct<name:string,year:bigint>,artists:map<string,struct<name:string>>>")


def test_a_pointer_the_id_resource_holds_still_resolves_inside_it(tmp_path):
    """``#/$defs/Local`` is inside the ``$id`` resource (the payload): JSON Schema's resolution
    finds it there, although the document has ``#/components/schemas/Local`` too. A pointer only
    the document has still comes from the document."""
    spec = _payload(_doc(tmp_path, extra={"local": {"$ref": "#/$defs/Local"},
                                          "doc_local": {"$ref": "#/components/schemas/Local"}},
                         defs={"Local": {"type": "object", "properties": {"from_payload": {"type": "boolean"}}}}))
    props = json.loads(spec.text)["properties"]
    assert props["local"] == {"type": "object", "properties": {"from_payload": {"type": "boolean"}}}
    assert props["doc_local"] == {"type": "object", "properties": {"from_document": {"type": "string"}}}
    assert not any("$defs" in n for n in spec.notes)


def test_a_pointer_found_nowhere_says_where_it_looked(tmp_path):
    with pytest.raises(AsyncApiDocumentError) as e:
        plan_read(load_document(_doc(tmp_path, extra={"lost": {"$ref": "#/components/schemas/Missing"}})),
                  channel="song.metadata")
    text = str(e.value)
    assert "'#/components/schemas/Missing'" in text and "SongMetaData" in text and "nor in the document" in text
    assert "payload" in text  # the document path


def test_inspect_says_which_document_a_reference_resolved_in(tmp_path, capsys):
    from connector.cli._inspect import inspect_command

    args = argparse.Namespace(document=_doc(tmp_path), channel=None, server=None, json=False,
                              allow_remote_refs=False, ref_root=None)
    assert inspect_command(args) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "$ref '#/components/schemas/Album' resolved in the AsyncAPI document" in out
    assert "album:struct<name:string,year:bigint>" in out.replace(" ", "")
