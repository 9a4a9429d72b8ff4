"""How presented text is shown: one policy for every text a view object holds.

The presenters' view objects (chatui.read.presenters) type each text field by what the
text is, and nothing else needs to know the fields:

- `Text`: plain text shown in an element (the template escapes it);
- `ToolText`: tool text, its mentions already neutralised (T1);
- `Html`: sanitised HTML (assistant Markdown);
- `AttrText`: text shown as an attribute value (what Copy args copies);
- `Key`: ids, URLs, times and a fixed vocabulary: never changed.

A `Display` says whether tool text and status lines have their secrets masked (T3:
`MASKED`, the default of every presenting function) and which transform, if any,
every shown text goes through, applied here by those types (the admin's
invisible-character markers, chatui.read.reveal). A new text field therefore needs a
type, and no edit anywhere else; a `str` field without one is refused (TypeError) the
first time its class goes through a transform, and by tests/read/test_display.py.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Annotated, Any, Literal, TypeVar

from django.utils.safestring import SafeString

from chatui.secrets import masked_fields

TextKind = Literal["text", "tool", "html", "attribute"]
TEXT_KINDS: tuple[TextKind, ...] = ("text", "tool", "html", "attribute")
KEY = "key"
VIEW = "view"  # a nested view object, or a tuple of them

Text = Annotated[str, "text"]
ToolText = Annotated[str, "tool"]
Html = Annotated[SafeString, "html"]
AttrText = Annotated[str, "attribute"]
Key = Annotated[str, KEY]

#: (text, its kind) → the text as shown.
Transform = Callable[[str, TextKind], str]

View = TypeVar("View")


@dataclasses.dataclass(frozen=True)
class Display:
    """T3 masking (the default everywhere; `mask_secrets=False` shows tool text as the
    runtime sent it, which only a holder of chatui.view_secrets may see) and the
    transform every shown text of a presented view goes through (none: as stored)."""

    mask_secrets: bool = True
    transform: Transform | None = None
    #: A share link's "hide tool inputs and outputs" (docs/sharing.md#links): tool
    #: entries show calls and outcomes only (chatui.sharing.without_tool_io strips the
    #: messages; this keeps such entries apart in the presenters' cache).
    hide_tool_io: bool = False
    #: docs/rendering.md#g21: where this surface serves a conversation's attachments (a
    #: share link's page, `/s/<token>/attachments/`); None: the conversation's own pages.
    attachment_base: str | None = None

    def message_text(
        self, role: str, metadata: dict[str, Any], content: str
    ) -> tuple[dict[str, Any], str]:
        """A message's metadata and content as they may be shown (chatui.secrets decides
        what is masked: a tool's text and a status line)."""
        if not self.mask_secrets:
            return metadata, content
        content, metadata = masked_fields(role, content, metadata)
        return metadata, content

    def show(self, view: View) -> View:
        """`view` with every text field (nested views too) through the transform."""
        if self.transform is None:
            return view
        return _shown(view, self.transform)


#: Secrets masked, text as stored: the page, the live frames, replay.
MASKED = Display()


def _shown(view: Any, transform: Transform) -> Any:
    changes: dict[str, Any] = {}
    for name, kind in field_kinds(type(view)).items():
        value = getattr(view, name)
        if value is None or kind == KEY:
            continue
        if kind in TEXT_KINDS:
            changes[name] = transform(value, kind)
        elif isinstance(value, tuple):
            changes[name] = tuple(_shown(each, transform) for each in value)
        else:
            changes[name] = _shown(value, transform)
    return dataclasses.replace(view, **changes)


@cache
def field_kinds(cls: type) -> dict[str, str]:
    """Each field of a view class that holds text (its kind, or KEY) or views (VIEW).
    Raises TypeError for a `str` field that does not say what its text is."""
    hints = typing.get_type_hints(cls, include_extras=True)
    kinds: dict[str, str] = {}
    for each in dataclasses.fields(cls):
        kind = _kind(hints[each.name], f"{cls.__name__}.{each.name}")
        if kind is not None:
            kinds[each.name] = kind
    return kinds


def _kind(hint: Any, where: str) -> str | None:
    options = typing.get_args(hint) if _is_union(hint) else (hint,)
    for option in options:
        if typing.get_origin(option) is Annotated:
            return next(mark for mark in option.__metadata__ if mark in (*TEXT_KINDS, KEY))
        if isinstance(option, type) and issubclass(option, str):
            raise TypeError(f"{where}: say what the text is (Text, ToolText, Html, AttrText, Key)")
        if _holds_views(option):
            return VIEW
    return None


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _holds_views(hint: Any) -> bool:
    """A view class, or a tuple of them."""
    if dataclasses.is_dataclass(hint):
        return True
    return typing.get_origin(hint) is tuple and any(
        dataclasses.is_dataclass(arg) for arg in typing.get_args(hint)
    )
