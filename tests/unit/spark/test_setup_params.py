"""Spark lowercases option keys: ``channel.param.streetlightId`` must still name the parameter."""
from connector.asyncapi import load_document, plan_read
from connector.read._plan import _param_names_as_documented

DOC = """
asyncapi: 3.0.0
info: {title: t, version: '1'}
channels:
  measured:
    address: 'lights.{streetlightId}.measured'
    parameters:
      streetlightId: {}
"""


def test_lowercased_parameter_option_gets_the_documents_spelling():
    doc = load_document(DOC)
    params = _param_names_as_documented(doc, {"streetlightid": "a1"})
    assert params == {"streetlightId": "a1"}
    assert plan_read(doc, channel="measured", params=params, require_schemas=False).topics == ("lights.a1.measured",)
    assert _param_names_as_documented(doc, {"other": "x"}) == {"other": "x"}  # unknown stays, plan_read reports it


def test_offset_option_typos_fail_when_the_setup_is_built():
    """Issue 17: errors at load(), not at the first action (build_setup runs in schema())."""
    import pytest

    from connector.errors import ConfigError
    from connector.options._parse import parse_options
    from connector.spark._setup import build_setup

    build_setup(parse_options({"asyncapi": DOC, "channel": "measured", "startingoffsets": "latest"}, streaming=None))
    for bad in ({"startingoffsets": "nonsense"}, {"endingoffsets": "{not json"}):
        with pytest.raises(ConfigError, match="ffset"):
            build_setup(parse_options({"asyncapi": DOC, "channel": "measured", **bad}, streaming=None))


def test_registry_without_framing_warns_at_load(caplog):
    import logging

    from connector.options._parse import parse_options
    from connector.spark._setup import build_setup

    with caplog.at_level(logging.WARNING, logger="asyncapi_kafka"):
        build_setup(parse_options({"asyncapi": DOC, "channel": "measured",
                                   "schema.registry.url": "http://127.0.0.1:1"}, streaming=None))
    assert any("wireFormat" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="asyncapi_kafka"):
        build_setup(parse_options({"asyncapi": DOC, "channel": "measured"}, streaming=None))
    assert not any("wireFormat" in r.getMessage() for r in caplog.records)


def test_a_setting_the_source_owns_fails_when_the_setup_is_built():
    """The conf builder is the one owner of the refusal; load() builds the configuration, so the
    option still fails then (before, the option parser refused it a second time)."""
    import pytest

    from connector.errors import ConfigError
    from connector.options._parse import parse_options
    from connector.spark._setup import build_setup

    with pytest.raises(ConfigError, match="'kafka.enable.auto.commit' is not supported: the source does not commit"):
        build_setup(parse_options({"asyncapi": DOC, "channel": "measured", "kafka.enable.auto.commit": "true"},
                                  streaming=None))
