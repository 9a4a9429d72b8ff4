"""The database, closer than the ORM goes: statements compiled once (`prepared`), the
SQLite backend that converts placeholders once (`sqlite`), and the bounded caches (`lru`).

The lowest layer: it knows Django's database API and nothing of chatui's own stages.
"""
