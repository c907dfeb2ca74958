# Spark (via PySpark) + JupyterLab + asyncapi-kafka, for the docker-compose stack.
FROM eclipse-temurin:17-jre-jammy
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv python3-pip curl \
    && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/venv
COPY . /src
RUN /opt/venv/bin/pip install --no-cache-dir "/src[test,glue]" "jupyterlab==4.4.9"
ENV PATH=/opt/venv/bin:$PATH PYSPARK_PYTHON=/opt/venv/bin/python
