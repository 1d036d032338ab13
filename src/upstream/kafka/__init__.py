"""Ingesting OpenLineage events from Kafka topics, as OpenLineage's `KafkaTransport` writes them."""
