"""G20 records: JSON arrays of flat objects and CSV as tables, JSON objects as key/value
lists, and the Details' JSON with multi-line strings shown as text blocks."""

from __future__ import annotations

import csv
import json
import re
from typing import Any

from chatui.text import clip, neutralise

from .ansi import plain
from .views import Cell, Column, DetailsView, JsonPiece, KeyValueView, Pair, RecordsView, Row

TABLE_ROWS = 50
MAX_COLUMNS = 30
CELL_CHARS = 200
MAX_PAIRS = 50
VALUE_CHARS = 2000
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_SCALARS = (str, int, float, bool, type(None))


def _cell(value: Any) -> str:
    if isinstance(value, str):
        text = value
    elif value is None:
        text = ""
    else:
        text = json.dumps(value)
    return neutralise(clip(text, CELL_CHARS))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _more(count: int, what: str = "row") -> str | None:
    return f"{count} more {what}{'' if count == 1 else 's'}" if count > 0 else None


def present_objects(items: list, source: str) -> RecordsView | None:
    """A JSON array of flat objects (every value a scalar) → a table of its first 50."""
    if not items or not all(isinstance(item, dict) for item in items):
        return None
    names: dict[str, None] = {}
    for item in items:
        for key, value in item.items():
            if not isinstance(value, _SCALARS):
                return None  # not flat: nested objects read better as JSON
            names.setdefault(key, None)
    keys = list(names)[:MAX_COLUMNS]
    shown = items[:TABLE_ROWS]
    columns = tuple(
        Column(
            neutralise(clip(str(key), CELL_CHARS)),
            numeric=any(item.get(key) is not None for item in shown)
            and all(item.get(key) is None or _is_number(item.get(key)) for item in shown),
        )
        for key in keys
    )
    numeric = [column.numeric for column in columns]
    rows = tuple(
        Row(tuple(Cell(_cell(item.get(key)), num) for key, num in zip(keys, numeric, strict=True)))
        for item in shown
    )
    return RecordsView(columns, rows, _more(len(items) - len(shown)), source, len(source))


def looks_like_csv(text: str) -> bool:
    """CSV with a header row: 3+ lines, each with the header's number (2+) of commas-separated
    fields. Cheap checks first: most texts fail on their first lines."""
    head = text.lstrip("\ufeff").split("\n", 3)
    if len(head) < 3 or "," not in head[0] or "," not in head[1]:
        return False
    return _csv_rows(text) is not None


def _csv_rows(text: str) -> list[list[str]] | None:
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").rstrip("\n").split("\n")
    try:
        rows = list(csv.reader(lines, strict=True))
    except csv.Error:
        return None
    width = len(rows[0]) if rows else 0
    if width < 2 or len(rows) < 3 or any(len(row) != width for row in rows):
        return None
    if any(not name.strip() for name in rows[0]):
        return None
    return rows


def present_csv(text: str) -> RecordsView | None:
    rows = _csv_rows(text)
    if rows is None:
        return None
    header, body = rows[0][:MAX_COLUMNS], rows[1:]
    shown = [row[:MAX_COLUMNS] for row in body[:TABLE_ROWS]]
    columns = tuple(
        Column(
            neutralise(clip(name, CELL_CHARS)),
            numeric=any(row[n].strip() for row in shown)
            and all(not row[n].strip() or _NUMBER.fullmatch(row[n].strip()) for row in shown),
        )
        for n, name in enumerate(header)
    )
    numeric = [column.numeric for column in columns]
    table = tuple(
        Row(tuple(Cell(_cell(value), num) for value, num in zip(row, numeric, strict=False)))
        for row in shown
    )
    return RecordsView(columns, table, _more(len(body) - len(shown)), text, len(text))


def present_object(value: dict, source: str) -> KeyValueView | None:
    """A JSON object → its keys and values: strings as they are (with line breaks: a text
    block), other values as compact JSON."""
    if not value:
        return None
    pairs = []
    for key, item in list(value.items())[:MAX_PAIRS]:
        text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
        pairs.append(
            Pair(
                neutralise(clip(str(key), CELL_CHARS)),
                neutralise(clip(text, VALUE_CHARS)),
                is_block=isinstance(item, str) and "\n" in item,
            )
        )
    more = _more(len(value) - len(pairs), "key")
    return KeyValueView(tuple(pairs), more, source, len(source))


#: A JSON escape of a UTF-16 surrogate: paired it is one character, alone it is none.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def parse_json(text: str) -> Any:
    """The JSON a text holds when it is an array or an object, else None. JSON whose
    escapes decode to a lone surrogate (`"\\ud800"`) is no text a page can hold (UTF-8
    has no such character): it stays as the text it was sent as."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{" or stripped[-1] not in "]}":
        return None
    try:
        data = json.loads(stripped)
        if _SURROGATE_ESCAPE.search(stripped):
            json.dumps(data, ensure_ascii=False).encode()  # UnicodeEncodeError if lone
        return data
    except (ValueError, RecursionError):  # UnicodeEncodeError is a ValueError
        return None


# -- the Details panel (G8 with G20's text blocks) ---------------------------------------


def present_details(value: Any) -> DetailsView | None:
    """Pretty JSON (indent 2) cut where a string holds a line break: that string becomes a
    text block. None when no string does (the plain JSON text is shown)."""
    pieces: list[JsonPiece] = []
    buffer: list[str] = []

    def emit(item: Any, indent: int) -> None:
        pad = "  " * (indent + 1)
        if isinstance(item, str) and "\n" in item:
            pieces.append(JsonPiece(neutralise("".join(buffer))))
            buffer.clear()
            pieces.append(JsonPiece(neutralise(plain(item)), is_block=True))  # G17: no escape shown
        elif isinstance(item, dict) and item:
            buffer.append("{")
            for n, (key, each) in enumerate(item.items()):
                buffer.append(
                    ("," if n else "")
                    + "\n"
                    + pad
                    + json.dumps(str(key), ensure_ascii=False)
                    + ": "
                )
                emit(each, indent + 1)
            buffer.append("\n" + "  " * indent + "}")
        elif isinstance(item, list) and item:
            buffer.append("[")
            for n, each in enumerate(item):
                buffer.append(("," if n else "") + "\n" + pad)
                emit(each, indent + 1)
            buffer.append("\n" + "  " * indent + "]")
        else:
            buffer.append(json.dumps(item, ensure_ascii=False, default=str))

    emit(value, 0)
    if not any(piece.is_block for piece in pieces):
        return None
    pieces.append(JsonPiece(neutralise("".join(buffer))))
    return DetailsView(tuple(piece for piece in pieces if piece.text))
