"""The facts every payload format shares are owned once, by ``PayloadFormat`` (issue 36): each
format names its own as class keywords, the base holds the defaults and the rule "binary
payloads need a schema's text" for both the reader and the encoder."""
from __future__ import annotations

import pyarrow as pa
import pytest

from registry import SchemaType

from connector.errors import SchemaMappingError
from connector.formats import FORMATS
from connector.formats.core import DecodeOptions, EncodeOptions, PayloadFormat

FACTS = {  # name: (title, registry type, indexed messages, binary payloads)
    "avro": ("Avro", SchemaType.AVRO, False, True),
    "protobuf": ("Protobuf", SchemaType.PROTOBUF, True, True),
    "json": ("JSON Schema", SchemaType.JSON, False, False),
}


def test_every_format_is_a_payload_format_with_its_facts():
    assert sorted(FORMATS) == sorted(FACTS)
    for name, fmt in FORMATS.items():
        assert isinstance(fmt, PayloadFormat)
        assert (fmt.name, fmt.title, fmt.registry_type, fmt.indexed_messages, fmt.binary_payloads) == (
            name, *FACTS[name])


@pytest.mark.parametrize("name", ["avro", "protobuf"])
@pytest.mark.parametrize("text", [None, ""])
def test_a_binary_format_refuses_a_schema_without_text(name, text):
    fmt = FORMATS[name]
    with pytest.raises(SchemaMappingError, match=f"^the {name} reader schema has no text$"):
        fmt.reader(text, (), None, DecodeOptions())
    with pytest.raises(SchemaMappingError, match=f"^the {name} schema has no text to encode with$"):
        fmt.encoder(text, (), None, EncodeOptions())


def test_json_without_a_schema_reads_and_writes_any_json():
    fmt = FORMATS["json"]
    reader = fmt.reader(None, (), None, DecodeOptions())
    values, errors = reader.decode_group(pa.array([b'{"a": [1, 2]}', b'"x"'], pa.binary()), None, (), "t")
    assert values.to_pylist() == ['{"a": [1, 2]}', '"x"'] and errors == [None, None]
    payloads, errors = fmt.encoder(None, (), None, EncodeOptions()).encode(pa.array(['{"a": 1}']), True)
    assert payloads.to_pylist() == [b'{"a":1}'] and (errors is None or not any(errors))


class _Calls(PayloadFormat, name="calls", title="Calls", registry_type=SchemaType.AVRO):
    """A format that records what the base hands its hooks."""

    def __init__(self):
        self.calls = []

    def _reader(self, text, refs, message, options):
        self.calls.append(("reader", text))
        return "a reader"

    def _encoder(self, text, refs, message, options):
        self.calls.append(("encoder", text))
        return "an encoder"

    writer_name = record_name = accepts_media_type = document_schema = None
    tagged_leaves = record_form = samples = None


class _TextFree(_Calls, binary_payloads=False, indexed_messages=True):
    pass


def test_class_keywords_declare_the_facts_and_the_base_holds_the_defaults():
    assert (_Calls.name, _Calls.title, _Calls.registry_type) == ("calls", "Calls", SchemaType.AVRO)
    assert (_Calls.indexed_messages, _Calls.binary_payloads) == (False, True)
    # a keyword not given is inherited
    assert (_TextFree.name, _TextFree.indexed_messages, _TextFree.binary_payloads) == ("calls", True, False)
    assert PayloadFormat.binary_payloads is True and PayloadFormat.indexed_messages is False


def test_the_base_checks_the_text_then_asks_the_hook():
    fmt = _Calls()
    assert fmt.reader("s", (), None, DecodeOptions()) == "a reader"
    assert fmt.encoder("s", (), None, EncodeOptions()) == "an encoder"
    with pytest.raises(SchemaMappingError, match="^the calls reader schema has no text$"):
        fmt.reader(None, (), None, DecodeOptions())
    assert fmt.calls == [("reader", "s"), ("encoder", "s")]
    free = _TextFree()
    assert free.reader(None, (), None, DecodeOptions()) == "a reader"
    assert free.encoder(None, (), None, EncodeOptions()) == "an encoder"
    assert fmt.canonical('{"b": 1,  "a": 2}') == '{"a":2,"b":1}'


def test_a_format_must_name_itself_and_implement_every_hook():
    with pytest.raises(TypeError, match="declares no name, registry_type"):
        class _Nameless(PayloadFormat, title="Nameless"):
            pass

    class _Half(PayloadFormat, name="half", title="Half", registry_type=SchemaType.JSON):
        def _reader(self, text, refs, message, options):
            return None

    with pytest.raises(TypeError, match="abstract"):
        _Half()
