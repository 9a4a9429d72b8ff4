"""A2 (docs/rendering.md#a2): how the admin shows a time. Every time to the second, an
event's to the millisecond, in the auditor's time zone (the site's `TIME_ZONE`,
`DJANGO_TIME_ZONE` in docs/settings.md), the ISO value on hover; never raw ISO text with
microseconds. Offsets from a run's start read "+1.2 s".

Plain strings and `<time>` elements built by `format_html` (the text is ours: digits).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.contrib import admin
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html
from django.utils.safestring import SafeString

from chatui.text import format_duration

SECOND = "%Y-%m-%d %H:%M:%S"


def _local(moment: datetime) -> datetime:
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, UTC)
    return timezone.localtime(moment)


def exact_time(moment: datetime | None) -> str:
    """ "2026-11-22 18:04:05 UTC": local time to the second; "" for none."""
    if moment is None:
        return ""
    local = _local(moment)
    return f"{local:{SECOND}} {local:%Z}".strip()


def event_time(moment: datetime | None) -> str:
    """ "2026-11-22 18:04:05.123": an event's local time to the millisecond."""
    if moment is None:
        return ""
    local = _local(moment)
    return f"{local:{SECOND}}.{local.microsecond // 1000:03d}"


def iso_time(moment: datetime | None) -> str:
    """The hover value: ISO 8601 in the local zone, to the millisecond."""
    if moment is None:
        return ""
    return _local(moment).isoformat(timespec="milliseconds")


def time_element(moment: datetime | None, *, millis: bool = False, zone: bool = True) -> SafeString:
    """`<time datetime="ISO" title="ISO">2026-11-22 18:04:05 UTC</time>`, or "—"; to the
    millisecond with `millis`, without the zone's name with `zone=False`."""
    if moment is None:
        return SafeString("—")
    if millis:
        text = event_time(moment)
    else:
        text = exact_time(moment) if zone else f"{_local(moment):{SECOND}}"
    iso = iso_time(moment)
    return format_html('<time datetime="{}" title="{}">{}</time>', iso, iso, text)


def offset_text(milliseconds: float) -> str:
    """ "+1.2 s" after a run started (never negative: a runtime's clock may lag ours)."""
    return "+" + format_duration(max(0.0, milliseconds))


def offset_between(moment: datetime, start: datetime) -> str:
    return offset_text((moment - start).total_seconds() * 1000)


def parse_moment(raw: Any) -> datetime | None:
    """A stored ISO string (an approval's `decided_at`) as an aware datetime; None for
    anything else, so a bad value shows "—", never its text."""
    if isinstance(raw, datetime):
        moment: datetime | None = raw
    elif isinstance(raw, str):
        try:
            moment = parse_datetime(raw)
        except ValueError:
            moment = None
    else:
        moment = None
    if moment is not None and timezone.is_naive(moment):
        moment = timezone.make_aware(moment, UTC)
    return moment


def timed(attribute: str, description: str, *, millis: bool = False) -> Any:
    """An admin column or field showing `obj.<attribute>` as A2 says, ordered by it:
    `created_shown = timed("created_at", "created")`."""

    @admin.display(description=description, ordering=attribute)
    def shown(model_admin: Any, obj: Any) -> SafeString:
        return time_element(getattr(obj, attribute), millis=millis)

    return shown
