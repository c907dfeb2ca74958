"""asyncapi-kafka: read Kafka topics described by AsyncAPI documents into typed Spark DataFrames."""
__version__ = "0.1.0"
