"""The only writer: events in, the log appended, messages projected.

runtime ─▶ dialect translator ─▶ `service.ingest` (validate, seq, append Event) ─▶
`projection` ─▶ on commit ─▶ broadcast (chatui.live).

`events` is the native contract (docs/events.md), `projection` turns events into the
messages the page shows, `approvals` records a person's decisions as events, and
`writer_threads` runs ingest on threads that keep their database connections.
Nothing here imports the read side or the renderer.
"""
