"""The base of every enum whose values are option spellings (Mode, EvolutionMode, ...)."""
from __future__ import annotations

import enum
from typing import TypeVar

__all__ = ["OptionEnum"]

E = TypeVar("E", bound="OptionEnum")


class OptionEnum(str, enum.Enum):
    """A ``str`` enum whose values are option spellings: formats as its value on every Python
    (3.12 changed ``Enum.__format__``) and parses any case with :meth:`parse`."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @classmethod
    def parse(cls: type[E], value: "str | OptionEnum", allowed: "tuple[E, ...] | None" = None) -> E:
        """The member spelled ``value`` (any case); :class:`ConfigError` naming the valid
        spellings when unknown or not in ``allowed``."""
        from connector.errors import ConfigError

        choices = tuple(allowed or cls)
        if isinstance(value, cls) and value in choices:
            return value
        wanted = str(value).strip().lower()
        for member in choices:
            if member.value.lower() == wanted:
                return member
        raise ConfigError(f"{cls.label()} must be one of {', '.join(m.value for m in choices)}, got {str(value)!r}")

    @classmethod
    def label(cls) -> str:
        """How messages name the setting (the option name, by default the class name)."""
        return cls.__name__
