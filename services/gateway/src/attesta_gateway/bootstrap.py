"""Wiring of the gateway: settings, messaging, HTTP app, uvicorn."""

from __future__ import annotations

from pydantic import Field

from attesta_platform.settings import ServiceSettings, load_settings

NAME = "gateway"


class GatewaySettings(ServiceSettings):
    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8080, ge=0, le=65535)
    chat_timeout_s: float = Field(default=15.0, gt=0)


def build_app(settings: GatewaySettings | None = None):
    from attesta_gateway.entrypoints.http import create_app
    from attesta_platform.messaging import Messaging

    settings = settings or load_settings(GatewaySettings)
    messaging = Messaging.from_settings(settings, f"{NAME}-{settings.instance_id}")
    return create_app(messaging, settings.instance_id, settings.chat_timeout_s,
                      settings.kafka_partitions)


def main() -> None:
    import uvicorn

    from attesta_platform.logs import configure_logging

    settings = load_settings(GatewaySettings)
    configure_logging(NAME, settings.log_level, settings.log_json)
    uvicorn.run(build_app(settings), host=settings.http_host, port=settings.http_port,
                log_level="warning")
