"""Django's SQLite backend, with each statement's placeholders converted once.

Django's SQLite cursor rewrites every statement from Django's placeholders (`%s`) to
SQLite's (`?`) with a regular expression, on every execute: about 3 % of a single-event
request's CPU (py-spy `--gil` over bench/p2), for statements that are nearly always the
same few (chatui.db.prepared compiles the hot ones once). Here the rewrite is kept per
statement text, in a bounded cache; everything else is Django's backend unchanged.
config/settings.py names this module as the ENGINE when DATABASE_URL is SQLite.
"""

from __future__ import annotations

from functools import lru_cache

from django.db.backends.sqlite3 import base


class CursorWrapper(base.SQLiteCursorWrapper):
    def convert_query(self, query, *, param_names=None):
        if param_names is None:
            return _in_qmark_style(query)
        return super().convert_query(query, param_names=param_names)


@lru_cache(maxsize=1024)
def _in_qmark_style(query: str) -> str:
    """What Django's `SQLiteCursorWrapper.convert_query` gives for "format" style."""
    return base.FORMAT_QMARK_REGEX.sub("?", query).replace("%%", "%")


class DatabaseWrapper(base.DatabaseWrapper):
    def create_cursor(self, name=None):
        return self.connection.cursor(factory=CursorWrapper)
