"""The registry configuration of a read or a write: the document's registry (the Kafka server
binding's ``schemaRegistryUrl`` / vendor, Glue's endpoint, region and registry name) under the
user's ``schema.registry.*`` options. One builder for the source, the sink and the CLI."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from registry import Vendor

__all__ = ["registry_config_for"]


def _from_plan(plan: Any) -> dict[str, str]:
    merged: dict[str, str] = {}
    if plan is None:
        return merged
    if plan.registry_vendor is Vendor.AWS_GLUE:
        # For Glue the binding's schemaRegistryUrl is the service endpoint (LocalStack, VPC
        # endpoint, a regional URL), not a REST registry base.
        merged["schema.registry.vendor"] = Vendor.AWS_GLUE.value
        if plan.registry_url:
            merged["schema.registry.glue.endpoint.url"] = plan.registry_url.split("?", 1)[0].rstrip("/")
        if plan.registry_name:
            merged["schema.registry.glue.registry.name"] = plan.registry_name
        if plan.registry_region:
            merged["schema.registry.glue.region"] = plan.registry_region
    else:
        if plan.registry_url:
            merged["schema.registry.url"] = plan.registry_url
        if plan.registry_vendor is not None:
            merged["schema.registry.vendor"] = plan.registry_vendor.value
    return merged


def registry_config_for(options: Mapping[str, str], plan: Any = None):
    """``RegistryConfig`` from the document's registry and the ``schema.registry.*`` options
    (secrets included; they win), or None when neither names a registry.

    Parameters
    ----------
    options : mapping of str to str
        ``schema.registry.*`` options, lowercase (``SourceOptions.registry_options()``).
    plan : connector.asyncapi.ReadPlan, optional
        The channel's plan: its ``registry_url``, ``registry_vendor``, ``registry_name``,
        ``registry_region``.

    Examples
    --------
    >>> registry_config_for({}) is None
    True
    >>> registry_config_for({"schema.registry.url": "http://sr.example:8081"}).urls
    ('http://sr.example:8081',)
    """
    from registry import RegistryConfig

    merged = _from_plan(plan)
    merged.update(options)
    if not (merged.get("schema.registry.url") or merged.get("schema.registry.file.path")
            or _names_glue(merged.get("schema.registry.vendor"))):
        return None
    return RegistryConfig.from_options(merged)


def _names_glue(vendor: str | None) -> bool:
    """Glue needs no URL (its endpoint is regional): the vendor alone names a registry."""
    from registry import RegistryConfigError

    try:
        return vendor is not None and Vendor.parse(vendor) is Vendor.AWS_GLUE
    except RegistryConfigError:
        return True  # an unknown vendor: let RegistryConfig refuse it, naming the valid ones
