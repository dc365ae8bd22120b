"""Test helpers and fakes of Attesta: real servers and real infrastructure on 127.0.0.1, no
mocks. Not part of any runtime wheel (``tests/test_wheel_contents.py``); installed editable by
``scripts/install.sh``.

- ``infra``: pytest helpers for the real Kafka, PostgreSQL and Redis (temporary databases,
  topics, consumers), free ports, Prometheus text parsing.
- ``chat_server``: ``FakeChatServer``, a scripted OpenAI-compatible chat-completions server with
  hostile replies (the answer generator's and the judge's tests).
- ``collector``, ``evidence``: each service's migrated temporary database and its other test
  helpers.
- ``llm``: ``attesta run llm`` as a subprocess (tests that need the real local model).
- ``alert_receivers``: a webhook receiver (aiohttp, checks signatures) and an SMTP server
  (aiosmtpd) on 127.0.0.1, recording what the alert channels delivered.

The collector's fake engine (``attesta_collector.fake_engine``) stays in the collector: the
demo starts it (``scripts/demo.py``, in the tools image).
"""
