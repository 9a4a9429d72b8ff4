"""Everything that reads: selectors (queries), presenters (render rules as plain data),
and what is built on them — pages, listing, search, serializers, exporters, replay.

GET page ─▶ `selectors` ─▶ `presenters` ─▶ templates. Selectors and search queries never
import the renderer; presenters never write.
"""
