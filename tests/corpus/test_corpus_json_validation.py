"""JSON Schema validation on read agrees with python-jsonschema on every corpus JSON schema.

For each schema, batches of records — valid documents (``json_values.documents``) and the same
documents broken by schema-aware edits (``json_mutations.mutated``: a required member dropped,
an ``enum`` value swapped, bounds crossed, an additional member, the wrong ``oneOf`` branch, the
wrong type, a broken pattern, lengths and counts one past their limits, a repeated item, ...) —
are decoded in one ``decode_column`` call and each row is held to the reference:

* python-jsonschema (the validator class it picks for the schema, no format checker) calls the
  record invalid → the row is an error that names the first error jsonschema reports (its
  keyword and JSON path), and its value is null;
* it calls it valid → the row decodes to the document's value under the type mapping
  (``json_values.arrow_form``), with no error; unless the mapping cannot hold the value (a
  string where the schema's type-less object maps to a struct, an integer past 64 bits, a
  non-date in a date-time column): then a row error that is not a validation error.

Budget: ``VALIDATION_EXAMPLES`` batches per schema (default 12, about 8 rows each).
"""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from benchmarks.corpus._gen import cases
from connector.formats import build_decoder, decode_column
from connector.formats.json_schema._reference import json_path, validator_class
from connector.formats.json_schema._schema import parse_json_schema
from tests.roundtrip import json_values as jv
from tests.roundtrip.json_mutations import dumps, mutated
from wireformat import Framing

pytestmark = pytest.mark.timeout(600)

CASES = [c for c in cases() if c.fmt == "json"]
EXAMPLES = int(os.environ.get("VALIDATION_EXAMPLES", 12))
INVALID = "not valid against its schema: "
# VALIDATION_SHRINK=0: the first failure as found (shrinking a batch of big documents is slow)
_PHASES = [Phase.explicit, Phase.generate] + ([] if os.environ.get("VALIDATION_SHRINK") == "0" else [Phase.shrink])


def _expected(node, doc):
    """The row's value under the mapping, or None when the mapping cannot hold the document."""
    try:
        value = jv.arrow_form(node, doc)
        pa.array([value], node.arrow)
    except (ValueError, TypeError, AttributeError, OverflowError, pa.ArrowException):
        return None
    return jv.normal(node, value)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_a_row_is_an_error_exactly_when_python_jsonschema_calls_the_record_invalid(case):
    schema = json.loads(case.text)
    node = parse_json_schema(case.text, max_depth=case.options.max_recursion_depth)
    validator = validator_class(schema)(schema)
    decoder = build_decoder(case.spec, options=case.options)
    from jsonschema.exceptions import best_match

    records = mutated(schema)
    seen = {"invalid": 0, "valid": 0, "unmapped": 0}

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, phases=_PHASES,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(records, min_size=1, max_size=12))
    def prop(docs):
        payloads = pa.array([dumps(d) for d in docs], pa.binary())
        res = decode_column(payloads, framing=Framing.NONE, decoder=decoder)
        got, errors = res.values.to_pylist(), res.errors.to_pylist()
        for doc, value, err in zip(docs, got, errors):
            first = best_match(validator.iter_errors(doc))
            if first is not None:
                seen["invalid"] += 1
                assert err is not None and INVALID in err, (doc, err, first.message)
                assert value is None
                named = err.split(INVALID, 1)[1]
                keyword = "false" if first.validator is None else first.validator
                assert f"'{keyword}'" in named and named.startswith(json_path(first.absolute_path)), \
                    (named, first.validator, list(first.absolute_path))
                continue
            want = _expected(node, doc)
            if want is None:
                seen["unmapped"] += 1
                assert err is not None and INVALID not in err, (doc, err)
                continue
            seen["valid"] += 1
            assert err is None, (doc, err)
            assert jv.normal(node, value) == want, (doc, value)

    prop()
    assert seen["invalid"] and seen["valid"], seen
