"""Parsers of registry answers and snapshot files: typed errors only, on any input (no network)."""
from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registry import RegistryConfigError, Schema, SchemaNotFound, SchemaParseError, SchemaType
from registry._file import FileRegistry
from registry._types import SchemaReference
from registry._apicurio import sniff_schema_type
from registry._base import guid_text
from registry._confluent import schema_from_document
from registry._file import schema_document
from registry._http import Response, _error_for
from registry._types import schema_type_of

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                           max_leaves=12)
docs = st.fixed_dictionaries({}, optional={"schema": st.text(max_size=10) | st.integers(),
                                           "schemaType": st.sampled_from(["AVRO", "JSON", "PROTOBUF", "XML", 3]),
                                           "references": json_values, "id": json_values,
                                           "version": json_values, "guid": json_values,
                                           "subject": json_values})


@given(docs | json_values)
def test_schema_from_document_typed_errors_only(doc):
    try:
        s = schema_from_document(doc)
    except SchemaParseError:
        return
    assert isinstance(s.text, str) and isinstance(s.schema_type, SchemaType)


@given(st.text(max_size=80))
def test_sniff_typed_errors_only(text):
    try:
        assert isinstance(sniff_schema_type(text), SchemaType)
    except SchemaParseError:
        pass


@given(st.binary(max_size=80), st.integers(min_value=300, max_value=599))
def test_error_for_any_body(body, status):
    err = _error_for(Response(status, {}, body, "http://h/x"))
    assert err.status == status and "http://h/x" in str(err)


def test_error_classification():
    body = json.dumps({"error_code": 40403, "message": "Schema not found"}).encode()
    e = _error_for(Response(404, {}, body, "http://u:pw@h/schemas/ids/1"))
    assert isinstance(e, SchemaNotFound) and e.error_code == 40403 and "pw" not in str(e) + e.url


def test_schema_type_spellings():
    assert schema_type_of(None) is SchemaType.AVRO
    assert schema_type_of("json") is SchemaType.JSON
    assert schema_type_of("PROTOBUF") is SchemaType.PROTOBUF
    with pytest.raises(ValueError):
        schema_type_of("XML")


def test_guid_text():
    import uuid
    u = uuid.uuid4()
    assert guid_text(u.bytes) == guid_text(str(u).upper()) == guid_text(u) == str(u)
    with pytest.raises(RegistryConfigError):
        guid_text(b"short")


def test_schema_is_picklable_and_short_repr():
    ref = Schema(SchemaType.AVRO, '"long"', id=2, subject="m", version=1)
    s = Schema(SchemaType.AVRO, "x" * 10000, id=1, references=(SchemaReference("M", "m", 1),),
               resolved_references=(("M", ref),))
    assert pickle.loads(pickle.dumps(s)) == s
    assert len(repr(s)) < 200


def _snapshot(tmp_path, files: dict):
    for rel, content in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content if isinstance(content, str) else json.dumps(content))
    return FileRegistry(tmp_path)


def test_file_registry_lookups_and_errors(tmp_path):
    import uuid
    g = str(uuid.uuid4())
    reg = _snapshot(tmp_path, {
        "ids/1.json": {"schema": '"int"'},
        "guids/" + g + ".json": {"schema": '"int"', "schemaType": "AVRO"},
        "global-ids/1001.json": {"schema": "{}", "schemaType": "JSON"},
        "subjects/a%2Eb/1.json": {"schema": '"long"', "subject": "a.b", "version": 1},
        "subjects/a%2Eb/3.json": {"schema": '"string"', "subject": "a.b", "version": 3},
        "ids/2.json": "not json",
    })
    assert reg.get_schema_by_id(1).id == 1
    assert reg.lookup(("glue", uuid.UUID(g).bytes)).guid == g
    assert reg.lookup(("apicurio-legacy", 1001)).schema_type is SchemaType.JSON
    assert reg.lookup(("apicurio-new", 1)).text == '"int"'  # content ids fall back to ids/
    assert reg.get_latest("a.b").version == 3 and reg.list_versions("a.b") == [1, 3]
    assert reg.list_subjects() == ["a.b"]
    with pytest.raises(SchemaNotFound):
        reg.get_schema_by_id(3)
    with pytest.raises(SchemaParseError):
        reg.get_schema_by_id(2)
    with pytest.raises(SchemaNotFound):
        reg.get_latest("../../etc")  # encoded: cannot leave the snapshot directory
    with pytest.raises(RegistryConfigError):
        FileRegistry(tmp_path / "missing")


@settings(max_examples=50)
@given(st.text(min_size=1, max_size=30))
def test_file_registry_subject_names_never_escape(subject):
    from registry._file import _subject_dir
    d = _subject_dir(subject)
    assert "/" not in d and "." not in d and d not in ("", ".", "..")


def test_schema_document_round_trip():
    s = Schema(SchemaType.PROTOBUF, "syntax = \"proto3\";", id=4, guid="g", subject="s", version=2,
               references=(SchemaReference("a.proto", "a", 1),))
    assert schema_from_document(schema_document(s)) == s
