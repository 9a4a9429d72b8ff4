"""A JSONField that keeps objects' key order on PostgreSQL too.

Django's JSONField is `jsonb` on PostgreSQL, which reorders keys (shortest first).
Key order is data here: a tool call's arguments show in the order the agent gave
them (G3), an exported event log gives back what was posted, and re-projecting
the event log must give the same Messages as live projection did (docs/events.md#architecture). So
on PostgreSQL the column is `json`, which stores the text as sent; queries into
it (`payload__status=…`) read it as `jsonb`. Other databases store text already.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Func


class AsJsonb(Func):
    """The column as `jsonb` on PostgreSQL, where key lookups and comparisons
    need it (`json` has no `=`); the column unchanged elsewhere."""

    output_field = models.JSONField()

    def as_sql(self, compiler, connection, **extra_context):
        return compiler.compile(self.source_expressions[0])

    def as_postgresql(self, compiler, connection, **extra_context):
        sql, params = compiler.compile(self.source_expressions[0])
        return f"({sql})::jsonb", params


#: The lookups of JSONField that PostgreSQL has for jsonb only.
JSONB_LOOKUPS = frozenset({"has_key", "has_keys", "has_any_keys", "contains", "contained_by"})


class EncodedJSON(dict):
    """A JSON object that comes with its JSON text, written as that text: a value
    already encoded for its hash is not encoded again for its column (an OTLP span's
    event, docs/PERFORMANCE.md#p8). `text` must be the encoding of the dict as it is,
    keys in the dict's order: it is what a read gives back. `canonical`: the text is
    also `canonical_json`'s (sorted keys, no white space), so the hash chain may use it
    as the payload's part of the event's canonical form (`chatui.ingest.chain`)."""

    __slots__ = ("canonical", "text")

    def __init__(self, value: dict[str, Any], text: str, *, canonical: bool = False):
        super().__init__(value)
        self.text = text
        self.canonical = canonical

    def __reduce__(self):  # pickled (a cache) as the plain dict it reads back as
        return dict, (dict(self),)


class OrderedJSONField(models.JSONField):
    def db_type(self, connection: BaseDatabaseWrapper) -> str | None:
        if connection.vendor == "postgresql":
            return "json"
        return super().db_type(connection)

    def get_db_prep_value(self, value: Any, connection: BaseDatabaseWrapper, prepared=False):
        if type(value) is EncodedJSON:
            if connection.vendor != "postgresql":
                return value.text
            from psycopg.types.json import Json

            return Json(value, dumps=lambda _value, text=value.text: text)
        if connection.vendor != "postgresql":
            return super().get_db_prep_value(value, connection, prepared)
        from django.db.backends.postgresql.operations import get_json_dumps
        from psycopg.types.json import Json  # psycopg is installed wherever PostgreSQL is

        if not prepared:
            value = self.get_prep_value(value)
        return Json(value, dumps=get_json_dumps(self.encoder))

    def select_format(self, compiler, sql, params):
        # Read as text, as Django reads jsonb, so `from_db_value` decodes it with our
        # decoder (psycopg would otherwise hand over Python objects).
        sql, params = super().select_format(compiler, sql, params)
        if compiler.connection.vendor == "postgresql":
            return f"({sql})::text", params
        return sql, params

    def get_lookup(self, lookup_name: str):
        # `has_key`, `contains` and their kin are jsonb operators (`?`, `@>`) on
        # PostgreSQL: they read the column as jsonb, as key transforms do below.
        lookup = super().get_lookup(lookup_name)
        if lookup is None or lookup_name not in JSONB_LOOKUPS:
            return lookup

        def on_jsonb(lhs, rhs):
            return lookup(AsJsonb(lhs), rhs)

        return on_jsonb

    def get_transform(self, name: str):
        transform = super().get_transform(name)

        def on_jsonb(lhs, *args, **kwargs):
            return transform(AsJsonb(lhs), *args, **kwargs)

        return on_jsonb
