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
from connector.schema.rules._common import VECTORIZED_TYPES, ContractSettings, active_rules
from connector.schema.rules._crypto import LocalKms, local_kms_key
from connector.schema.rules._kms import KmsSettings
from connector.schema.rules._read import ReadRules
from connector.schema.rules._write import WriteOutcome, WriteRules

__all__ = ["ReadRules", "WriteRules", "WriteOutcome", "ContractSettings", "KmsSettings", "active_rules",
           "VECTORIZED_TYPES", "LocalKms", "local_kms_key", "local_kms_dek_maker",
           "NotVectorizable", "compile_cel", "split_guard"]


def local_kms_dek_maker(secret: str):
    """For :class:`connector.testing.RegistryServer`'s shared KEKs: ``algorithm -> (key material,
    key material wrapped by the local KMS of secret)``."""
    from connector.schema.rules._crypto import new_key_material

    kms = LocalKms(secret)

    def make(algorithm: str) -> tuple[bytes, bytes]:
        material = new_key_material(algorithm)
        return material, kms.encrypt(material)

    return make
