"""Watching lineage (design §4.8): subscriptions, the dispatcher that turns the change log
into notifications, and the deliverer that sends them to webhooks and Kafka."""
