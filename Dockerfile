# The bridge as a container, for users who run Docker (docker-compose.yml uses it).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY bridge ./bridge
COPY zkpaths ./zkpaths
RUN pip install --no-cache-dir .
USER nobody
ENTRYPOINT ["zk-bridge"]
# inside a container loopback is useless for scraping: listen on all of the container's addresses
EXPOSE 9308
CMD ["run", "--zookeeper", "zookeeper:2181", "--bootstrap-server", "kafka-1:9092,kafka-2:9092,kafka-3:9092", "--metrics-address", "0.0.0.0:9308"]
