"""`manage.py expire_approvals`: record `expired` (by "system") for every tool approval
past its deadline (docs/events.md#approvals). Readers and long polls do this for the conversations
they touch, and run workers at every heartbeat; this is the sweep for deployments
without workers (run it from cron). Idempotent: the first decision wins."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from chatui.ingest.approvals import expire_all_overdue


class Command(BaseCommand):
    help = "Expire tool approvals whose timeout has passed (docs/events.md#approvals)."

    def handle(self, *args, **options) -> None:
        expired = expire_all_overdue()
        self.stdout.write(f"{expired} approval{'' if expired == 1 else 's'} expired")
