"""The conversation list's filters: errors and tool names."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Exists, OuterRef, Q

from chatui.models import Message, Role
from chatui.read.reveal import reveal_invisible
from chatui.text import clip

from .base import ERROR_STATUS_Q


class ExistsFilter(admin.SimpleListFilter):
    """A yes/no filter: the conversations where `exists()` holds, or those where it
    does not. Subclasses name it (`title`, `parameter_name`, `labels`)."""

    labels: tuple[str, str]  # the "yes" and the "no" choice

    def exists(self) -> Exists:
        raise NotImplementedError

    def lookups(self, request, model_admin):
        return [("yes", self.labels[0]), ("no", self.labels[1])]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(self.exists())
        if self.value() == "no":
            return queryset.filter(~self.exists())
        return queryset


class HasErrorsFilter(ExistsFilter):
    """A failed tool call by its final outcome (W4, docs/rendering.md#w4: the
    conversation's count, so a failure a later attempt recovered is not one), or an
    error status line (a run that failed by itself)."""

    title = "errors"
    parameter_name = "has_errors"
    labels = ("With errors", "Without errors")

    def exists(self) -> Exists:
        return Exists(Message.objects.filter(ERROR_STATUS_Q, conversation=OuterRef("pk")))

    def queryset(self, request, queryset):
        failing = Q(failed_tool_count__gt=0) | self.exists()
        if self.value() == "yes":
            return queryset.filter(failing)
        if self.value() == "no":
            return queryset.exclude(failing)
        return queryset


class ToolNameFilter(admin.SimpleListFilter):
    """Conversations that called a tool, by name (the 200 first names, A→Z)."""

    title = "tool name"
    parameter_name = "tool"
    limit = 200

    def lookups(self, request, model_admin):
        names = (
            Message.objects.filter(role=Role.TOOL)
            .exclude(tool_name="")
            .order_by("tool_name")
            .values_list("tool_name", flat=True)
            .distinct()[: self.limit]
        )
        return [(name, reveal_invisible(clip(name, 60))) for name in names]

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        return queryset.filter(
            Exists(
                Message.objects.filter(
                    conversation=OuterRef("pk"), role=Role.TOOL, tool_name=self.value()
                )
            )
        )
