"""`manage.py run_worker`: a run worker (see chatui.agents.worker). SIGTERM or
SIGINT stops it; runs it still drives end failed ("the run was cancelled")."""

from __future__ import annotations

import asyncio
import contextlib
import signal

from django.core.management.base import BaseCommand

from chatui.agents.worker import RunWorker
from chatui.live.approval_clock import CLOCK


class Command(BaseCommand):
    help = "Drive the agent runs that web processes enqueue (CHATUI_RUN_WORKERS=1)."

    def handle(self, *args, **options) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        CLOCK.start()  # tool approvals expire at their deadline (chatui.live.approval_clock)
        serving = asyncio.ensure_future(RunWorker().serve())
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, serving.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await serving
        # Cancel the runs still going and let them record their end.
        runs = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in runs:
            task.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
