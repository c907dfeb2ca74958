"""Data contracts: the rules a Confluent registry attaches to schemas, applied on read and write.

=====================  =========================  =================================================
rule                   path                       how
=====================  =========================  =================================================
``ENCRYPT``            vectorized                 tagged string/bytes fields, column by column:
                                                  one key per DEK version, Tink's bytes
``ENCRYPT_PAYLOAD``    vectorized                 the whole payload column
``CEL`` condition      vectorized (Arrow subset)  :mod:`._cel`; else per record
``CEL_FIELD``          vectorized (Arrow subset)  fields outside arrays/maps; else per record
``CEL`` transform,     per record                 confluent-kafka's executors through its own
``JSONATA``,                                      serializer/deserializer (:mod:`._confluent`)
migrations, others
=====================  =========================  =================================================

The schema layer builds :class:`ReadRules` / :class:`WriteRules` on the driver (from the
reader/writer schemas' ``ruleSet`` and ``metadata`` and the job's ``rules.*`` options);
:func:`connector.formats.decode_column` and :func:`connector.formats.encode_column` call them, so
every path (source, sink, column functions) applies the same rules.
"""
from connector.schema.rules._cel import NotVectorizable, compile_cel, split_guard
from connector.schema.rules._common import ContractSettings, active_rules
from connector.schema.rules._kms import KmsSettings
from connector.schema.rules._read import ReadRules
from connector.schema.rules._write import WriteRules

__all__ = ["ReadRules", "WriteRules", "ContractSettings", "KmsSettings", "active_rules",
           "NotVectorizable", "compile_cel", "split_guard"]
