"""docker-compose.yml cannot run here (no Docker engine): check it statically — it parses,
has the documented services and ports, pins every image by version, and wires the Spark
service to the peers with the variables the integration tests read."""
import pathlib
import re

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]


def test_services_and_ports_as_documented():
    assert set(SERVICES) == {"kafka", "schema-registry", "spark"}
    assert "9092:9092" in SERVICES["kafka"]["ports"]
    assert "8081:8081" in SERVICES["schema-registry"]["ports"]
    assert "8888:8888" in SERVICES["spark"]["ports"]
    docs = (ROOT / "docs" / "spark-connect.md").read_text()
    assert "docker compose up -d" in docs


def test_images_are_pinned_by_version():
    for name, svc in SERVICES.items():
        image = svc.get("image")
        assert image, f"{name} has no image"
        repo, _, tag = image.rpartition(":")
        assert repo and tag and tag != "latest" and re.match(r"^\d+(\.\d+)+", tag), f"{name}: {image}"


def test_kafka_is_a_single_kraft_node():
    env = SERVICES["kafka"]["environment"]
    assert SERVICES["kafka"]["image"].startswith("apache/kafka:")
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert "CONTROLLER" in env["KAFKA_LISTENERS"] and "zookeeper" not in str(env).lower()


def test_spark_service_points_the_tests_at_the_stack():
    spark = SERVICES["spark"]
    env = spark["environment"]
    assert env["KAFKA_BOOTSTRAP_SERVERS"] == "kafka:29092"
    assert env["SCHEMA_REGISTRY_URL"] == "http://schema-registry:8081"
    registry_env = SERVICES["schema-registry"]["environment"]
    assert registry_env["SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS"].endswith("kafka:29092")
    dockerfile = ROOT / spark["build"]["dockerfile"]
    text = dockerfile.read_text()
    assert "temurin:17" in text and "pip install" in text
    for dep in ("kafka", "schema-registry"):
        assert spark["depends_on"][dep]["condition"] == "service_healthy"
