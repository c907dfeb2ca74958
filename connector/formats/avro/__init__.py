"""Avro: the schema model (parse, named types, references, Arrow types), the vectorized decoder
(one numpy engine for the whole spec, with writer→reader resolution) and encoder, and the
per-record reference encoder the tests hold the vectorized one against. Other packages reach it
through :data:`AVRO`, its :class:`~connector.formats.core.PayloadFormat`.

Examples
--------
>>> from connector.formats.avro import AVRO
>>> AVRO.name, AVRO.title
('avro', 'Avro')
"""
from connector.formats.avro._format import AVRO

__all__ = ["AVRO"]
