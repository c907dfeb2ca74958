"""The registry's error types are listed once (``registry.errors.__all__``); ``registry`` and
``connector.errors`` ("every error in one importable place", docs/api/errors.md) re-export that
list as it is, so a new registry error needs no second edit to be catchable from either."""
from __future__ import annotations

import inspect

import connector.errors
import registry
import registry.errors
from wireformat import AsyncApiKafkaError


def _error_types(module) -> set[str]:
    return {n for n, v in vars(module).items()
            if inspect.isclass(v) and issubclass(v, BaseException) and v.__module__ == module.__name__}


def test_registry_errors_module_lists_every_error_type_it_defines():
    assert set(registry.errors.__all__) == _error_types(registry.errors)
    assert all(issubclass(getattr(registry.errors, n), AsyncApiKafkaError) for n in registry.errors.__all__)


def test_registry_and_connector_errors_reexport_the_same_classes():
    for name in registry.errors.__all__:
        cls = getattr(registry.errors, name)
        assert name in registry.__all__ and getattr(registry, name) is cls
        assert name in connector.errors.__all__ and getattr(connector.errors, name) is cls


def test_connector_errors_lists_every_error_type_it_defines_or_imports():
    own = _error_types(connector.errors)
    assert own <= set(connector.errors.__all__)
    for name in connector.errors.__all__:
        assert issubclass(getattr(connector.errors, name), AsyncApiKafkaError)
