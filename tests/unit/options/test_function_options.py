"""The column functions parse their arguments through the option table (issue 36, item 3), as Spark's
``from_avro`` parses its options with its file source's class: each keyword argument is an option of
the function's scope, ``options=`` takes the same options by name, and one parse gives the values,
defaults, refusals and messages — nothing is checked again in ``connector/spark/functions.py``."""
from __future__ import annotations

import ast
import inspect
import pathlib

import pytest

from connector.errors import ConfigError
from connector.formats import Mode
from connector.options import FROM_REGISTRY, STRIP_HEADER, TO_REGISTRY, parse_any, parse_arguments
from connector.options._table import FUNCTIONS, OPTIONS
from connector.options._table import KEYWORDS, scope_default
from connector.spark import functions
from wireformat import Framing

ROOT = pathlib.Path(__file__).resolve().parents[3]
SCOPES = {functions.from_registry: FROM_REGISTRY, functions.to_registry: TO_REGISTRY,
          functions.strip_header: STRIP_HEADER, functions.schema_id: STRIP_HEADER}
COLUMNS = {"col", "headers", "options"}  # arguments that are columns (or the options themselves), not options


@pytest.mark.parametrize("fn", list(SCOPES), ids=lambda f: f.__name__)
def test_the_keyword_arguments_are_the_options_of_the_functions_scope(fn):
    scope = SCOPES[fn]
    params = inspect.signature(fn).parameters
    assert set(params) - COLUMNS == {kw for (s, kw) in KEYWORDS if s == scope}
    for name, p in params.items():
        if name in COLUMNS or p.default is None:
            continue
        # a default the signature shows is the table's default in this scope (the table owns it)
        opt = KEYWORDS[(scope, name)]
        assert getattr(parse_arguments(scope, {name: p.default}), opt.field) == \
            getattr(parse_arguments(scope, {}), opt.field) == opt.parse(opt, scope_default(opt, scope)), name


def test_a_keyword_names_one_option_per_function():
    pairs = [(f, o.keyword) for o in OPTIONS if o.keyword for f in o.scope & FUNCTIONS]
    assert len(pairs) == len(set(pairs)) == len(KEYWORDS)
    assert KEYWORDS[(FROM_REGISTRY, "schema_id")].key == "schema.id"       # the reader's id
    assert KEYWORDS[(TO_REGISTRY, "schema_id")].key == "use.schema.id"     # the writer's id


def test_arguments_and_options_are_one_parse():
    opts = parse_arguments(FROM_REGISTRY, {"schema": {"type": "string"}, "format": "AVRO", "with_errors": True,
                                           "registry_url": "http://kw:8081", "mode": None},
                           {"schema.registry.url": "http://option:8081", "schema.registry.basic.auth.username": "u",
                            "schema.registry.basic.auth.password": "pw", "rules.dlq.topic": "dlq",
                            "kafka.bootstrap.servers": "b:9092", "withErrors": "false"})
    assert opts.inline_schema == '{"type": "string"}' and opts.schema_format == "avro" and opts.with_errors is True
    assert opts.registry_options()["schema.registry.url"] == "http://kw:8081"  # the keyword wins
    assert opts.dlq_topic == "dlq" and opts.kafka_settings() == {"bootstrap.servers": "b:9092"}
    assert opts.mode is Mode.FAILFAST and opts.direction == FROM_REGISTRY and "pw" not in repr(opts)
    from connector.schema import SchemaRequest

    request = SchemaRequest.from_options(opts)  # the schema request a job's options make
    assert request.inline is not None and request.inline.format == "avro" and request.contract.dlq_topic == "dlq"


@pytest.mark.parametrize("scope, arguments, options, fragment", [
    (FROM_REGISTRY, {"wire_format": "nope"}, None, "from_registry(wire_format='nope'): option 'wireFormat' must be"),
    (FROM_REGISTRY, {"mode": "DROPMALFORMED"}, None, "from_registry(mode='DROPMALFORMED'): DROPMALFORMED: a column"),
    (FROM_REGISTRY, {"version": "newest"}, None, "from_registry(version='newest'): option 'schema.version' must be"),
    (FROM_REGISTRY, {"schema_id": 3, "subject": "s"}, None, "from_registry: schema_id= and subject= pin the schema"),
    (FROM_REGISTRY, {"channel": "orders"}, None, "channel= and server= name a channel of the document"),
    (FROM_REGISTRY, {"asyncapi": "doc.yaml"}, None, "asyncapi= needs channel="),
    (FROM_REGISTRY, {"format": "xml"}, None, "option 'schema.format' must be one of avro, protobuf, json"),
    (FROM_REGISTRY, {}, {"bootstrap.servers": "x"}, "Did you mean 'kafka.bootstrap.servers'?"),
    (FROM_REGISTRY, {}, {"startingOffsets": "earliest"}, "from_registry takes no option 'startingoffsets'"),
    (FROM_REGISTRY, {}, {"use.latest.version": "true"}, "from_registry takes no option 'use.latest.version'"),
    (TO_REGISTRY, {"wire_format": "auto"}, None, "to_registry(wire_format='auto'): auto and the header framings"),
    (TO_REGISTRY, {"wire_format": "header-confluent"}, None, "cannot travel in Kafka headers"),
    (TO_REGISTRY, {}, {"wireFormat": "auto"}, "to_registry(wire_format=...) 'auto': auto and the header framings"),
    (TO_REGISTRY, {"schema_id": 3, "use_latest_version": True}, None,
     "to_registry: use.latest.version= and schema_id= each choose the schema to write with; give one"),
    (TO_REGISTRY, {"auto_register": True}, {"use.latest.with.metadata": "v=2"}, "each choose the schema to write"),
    (TO_REGISTRY, {"compression": "gzip"}, None, "to_registry(compression='gzip'): option 'glue.compression' must be"),
    (TO_REGISTRY, {"schema_id": "latest"}, None, "schema version UUID"),
    (TO_REGISTRY, {"use_latest_version": "maybe"}, None, "must be true or false"),
    (STRIP_HEADER, {}, {"schema.registry.url": "http://r"}, "strip_header takes no option 'schema.registry.url'"),
])
def test_bad_arguments_fail_with_the_tables_message_naming_the_keyword(scope, arguments, options, fragment):
    with pytest.raises(ConfigError) as e:
        parse_arguments(scope, arguments, options)
    assert fragment in str(e.value).replace("use_latest_version=", "use.latest.version=")


def test_messages_never_echo_a_registry_url_or_a_secret():
    with pytest.raises(ConfigError) as e:
        parse_arguments(FROM_REGISTRY, {"registry_url": "http://u:s3cret@h:8081", "version": "bad"},
                        {"schema.registry.basic.auth.password": "pw-1"})
    assert "s3cret" not in str(e.value) and "pw-1" not in str(e.value) and "version='bad'" in str(e.value)


def test_the_functions_defaults():
    assert parse_arguments(STRIP_HEADER, {}).wire_format is Framing.AUTO
    assert parse_arguments(TO_REGISTRY, {}).wire_format is Framing.CONFLUENT
    fr = parse_arguments(FROM_REGISTRY, {})
    assert fr.wire_format is Framing.CONFLUENT and "wireformat" not in fr.given  # a document's framing may win
    assert fr.asyncapi is None and fr.glue_compression is None and fr.with_errors is False


def test_jobs_refuse_the_functions_own_options():
    for name in ("schema", "schema.format", "withErrors"):
        with pytest.raises(ConfigError, match="an argument of the column functions"):
            parse_any({"asyncapi": "doc.yaml", "channel": "c", name: "x"}, direction="read")
    with pytest.raises(ConfigError, match="unknown option 'witherror'"):
        parse_any({"asyncapi": "doc.yaml", "channel": "c", "witherror": "x"})


def test_the_column_functions_check_no_argument_themselves():
    """functions.py hands every argument to parse_arguments: it calls no parser and no conversion of
    its own (Mode.parse, Framing(...), int(...), .lower()), and compares no option value to text."""
    tree = ast.parse((ROOT / "connector" / "spark" / "functions.py").read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in ("parse", "Framing", "int", "lower", "upper", "bool", "_split_options") or \
                    (isinstance(f, ast.Attribute) and name == "get" and isinstance(f.value, ast.Name)
                     and f.value.id == "options"):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Compare) and any(isinstance(c, ast.Constant) and isinstance(c.value, str)
                                                   for c in (node.left, *node.comparators)):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    assert not found, "functions.py checks arguments itself:\n  " + "\n  ".join(found)


def test_compression_only_with_glue_is_one_check():
    """The sink and to_registry ask connector.options.glue_compression; no other module decides it."""
    deciders = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "connector").rglob("*.py")
                      if "glue_compression" in p.read_text(encoding="utf-8") and "Framing.GLUE" in
                      p.read_text(encoding="utf-8"))
    assert deciders == ["connector/options/_parse.py"]
    users = {str(p.relative_to(ROOT)) for p in (ROOT / "connector").rglob("*.py")
             if "glue_compression(opts" in p.read_text(encoding="utf-8")}
    assert {"connector/write/_setup.py", "connector/spark/functions.py"} <= users


def test_from_registry_takes_json_schema_validation_by_its_source_name():
    assert parse_arguments(FROM_REGISTRY, {}).json_validation is True
    assert parse_arguments(FROM_REGISTRY, {}, {"jsonSchemaValidation": "false"}).json_validation is False
    with pytest.raises(ConfigError):
        parse_arguments(TO_REGISTRY, {}, {"jsonSchemaValidation": "false"})
