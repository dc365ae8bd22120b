"""Alert deliveries per second through the classifier's delivery worker step (issue #25):
``DeliverDueAlerts`` claims due deliveries (committed claim), sends each through
``adapters/notifiers.py`` to a signed-webhook receiver on 127.0.0.1, and records the outcome,
20 at a time, on a fresh migrated database. The receiver runs in the same process and checks
every signature, so the CPU figure includes it.

    flock /tmp/attesta-heavy.lock .venv/bin/python benchmarks/alert_delivery_worker.py [--alerts 300]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from functools import partial
from urllib.parse import urlsplit

from attesta_classifier.adapters import notifiers
from attesta_classifier.adapters.migrate import migrate
from attesta_classifier.adapters.postgres import ClassifierUnitOfWork, create_pool
from attesta_classifier.bootstrap import build_bus, build_heuristic
from attesta_classifier.domain import alert_commands as a
from attesta_classifier.domain.commands import CreateBrand
from attesta_classifier.service_layer.alerting import DeliveryPolicy
from attesta_platform.settings import app_database_url
from attesta_testing.infra import temp_database
from attesta_testing.alert_receivers import WebhookReceiver

ROLE, PASSWORD = "attesta_classifier_app", "attesta-classifier-dev-only"


async def main(alerts: int) -> None:
    async with temp_database("alertbench") as admin_url:
        name = urlsplit(admin_url).path.lstrip("/")
        await migrate(admin_url, name, ROLE, PASSWORD)
        pool = await create_pool(app_database_url(admin_url, name, ROLE, PASSWORD), 6)
        async with WebhookReceiver() as hooks:
            s = notifiers.NotifierSettings(policy=hooks.policy())
            client = notifiers.http_client(s)
            bus = build_bus(partial(ClassifierUnitOfWork, pool), heuristic=build_heuristic(),
                            alert_outbound=hooks.policy(),
                            notifier=partial(notifiers.deliver, settings=s, client=client),
                            alert_delivery=DeliveryPolicy())
            await bus.handle(CreateBrand("bench", "Lumora", "lumora"))
            rule = await bus.handle(a.CreateAlertRule("bench", "lumora", "citation_rate"))
            created = await bus.handle(a.CreateAlertChannel("bench", "webhook", hooks.url("/ok")))
            hooks.secret = created.channel.secret
            for _ in range(alerts):
                await bus.handle(a.SendTestAlert("bench", rule.rule_id))
            t0, c0 = time.perf_counter(), time.process_time()
            total = 0
            while True:
                step = await bus.handle(a.DeliverDueAlerts(20))
                total += step["delivered"]
                if step["claimed"] == 0:
                    break
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            ok = sum(1 for r in hooks.requests if r.signature == "ok")
            print(f"delivered {total} webhooks in {wall:.2f} s wall ({total/wall:.0f}/s), {cpu:.2f} s CPU of this process (receiver in the same process); signatures ok {ok}/{len(hooks.requests)}")
            await client.aclose()
        await pool.close()

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alerts", type=int, default=300)
    asyncio.run(main(parser.parse_args().alerts))
