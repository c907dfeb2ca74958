"""One vendor table: the option, the document and the registry client agree on every spelling."""
from __future__ import annotations

import logging
import pathlib
import re

import pytest
from registry import RegistryConfig, RegistryConfigError, Vendor

from connector.asyncapi import load_document, plan_read

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("spelling,vendor", [
    ("confluent", Vendor.CONFLUENT), ("Karapace", Vendor.CONFLUENT), ("redpanda", Vendor.CONFLUENT),
    ("apicurio", Vendor.APICURIO), ("ibm", Vendor.APICURIO), ("glue", Vendor.AWS_GLUE),
    ("AWS-Glue", Vendor.AWS_GLUE), ("file", Vendor.FILE)])
def test_option_and_document_read_every_spelling_alike(spelling, vendor):
    assert Vendor.parse(spelling) is vendor
    assert Vendor.from_document(spelling) is vendor


def test_unknown_vendor_option_is_an_error_naming_the_valid_ones():
    with pytest.raises(RegistryConfigError, match="valid: confluent, apicurio, aws-glue, file"):
        RegistryConfig.from_options({"schema.registry.url": "http://sr:8081", "schema.registry.vendor": "acme"})


def _doc(vendor: str) -> str:
    return f"""
asyncapi: 3.0.0
info: {{title: t, version: '1'}}
servers:
  prod:
    host: broker:9092
    protocol: kafka
    bindings: {{kafka: {{schemaRegistryUrl: 'http://sr:8081', schemaRegistryVendor: {vendor}}}}}
channels:
  orders: {{address: orders}}
"""


def test_unknown_document_vendor_reads_as_unset_and_says_so(caplog):
    """Documents are shared with other tools: an unknown vendor is not fatal, and the warning
    names the document path and the option that chooses one."""
    with caplog.at_level(logging.WARNING, logger="registry"):
        plan = plan_read(load_document(_doc("acme")), channel="orders")
    assert plan.registry_vendor is None and plan.registry_vendor_raw == "acme"
    assert "servers.prod.bindings.kafka.schemaRegistryVendor" in caplog.text
    assert "schema.registry.vendor" in caplog.text


def test_ibm_in_a_document_is_apicurio_like_the_option():
    plan = plan_read(load_document(_doc("ibm")), channel="orders")
    assert plan.registry_vendor is Vendor.APICURIO and plan.framing().value == "header-apicurio-global"


def test_no_second_vendor_table_in_the_product_code():
    """Vendor spellings other than the vendor names themselves live in registry/_vendor.py only.
    (``connector/testing`` is no product code: it runs Karapace, the server, for the tests.)"""
    aliases = ("karapace", "redpanda", "apicurio-ccompat", '"ibm"', '"aws"', "'aws'")
    found = []
    for pkg in ("registry", "connector", "wireformat"):
        for path in (ROOT / pkg).rglob("*.py"):
            if path.name == "_vendor.py" or "testing" in path.relative_to(ROOT).parts:
                continue
            text = path.read_text(encoding="utf-8")
            for alias in aliases:
                for m in re.finditer(re.escape(alias), text):
                    line = text[:m.start()].count("\n") + 1
                    src = text.splitlines()[line - 1]
                    if not src.lstrip().startswith(("#", '"', "'", "`")) and "doc" not in src and "Karapace" not in src:
                        found.append(f"{path.relative_to(ROOT)}:{line}: {src.strip()}")
    assert not found, "vendor spellings outside registry/_vendor.py:\n" + "\n".join(found)
