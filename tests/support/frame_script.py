"""A scripted conversation that plays events and renders each live frame (the kept-cache
properties in tests/live)."""

from __future__ import annotations


class Script:
    """Turns drawn (kind, index) pairs into the events of runs that go on: `index`
    picks the text streamed, the call an event is about, whether a call is nested."""

    def __init__(self) -> None:
        self.n = 0
        self.run = 0
        self.calls: list[str] = []
        self.streaming: str | None = None  # the message deltas go to

    def events(self, kind: str, index: int) -> list[dict]:
        self.n += 1
        at = {
            "timestamp": f"2026-11-02T12:{self.n // 60 % 60:02d}:{self.n % 60:02d}Z",
            "run_id": f"r{self.run}",
        }
        return getattr(self, "_" + kind)(at, index)

    def _user(self, at: dict, index: int) -> list[dict]:
        return [{**at, "type": "user.message", "content": f"Ask {self.n}"}]

    def _thinking(self, at: dict, index: int) -> list[dict]:
        return [{**at, "type": "agent.status", "status": "thinking", "message": f"t{self.n}"}]

    def _end(self, at: dict, index: int) -> list[dict]:
        """S3: the run's thinking lines are removed; the next run starts."""
        self.run += 1
        self.calls, self.streaming = [], None
        running = {**at, "run_id": f"r{self.run}", "type": "agent.status", "status": "running"}
        return [{**at, "type": "agent.status", "status": "completed"}, running]

    def _delta(self, at: dict, index: int) -> list[dict]:
        self.streaming = self.streaming or f"a{self.n}"
        text = ["{", "Hello", " world", "\n\n- item", " **bold**"][index % 5]
        return [{**at, "type": "agent.message.delta", "message_id": self.streaming, "delta": text}]

    def _step(self, at: dict, index: int) -> list[dict]:
        """The streamed message's end, or a text of its own."""
        message_id, self.streaming = self.streaming or f"s{self.n}", None
        content = f"Said {self.n}."
        return [
            {**at, "type": "agent.step.completed", "message_id": message_id, "content": content}
        ]

    def _hidden(self, at: dict, index: int) -> list[dict]:
        """A step that only calls tools: it does not end a batch."""
        self.streaming, call = None, f"c{self.n}"
        self.calls.append(call)
        step = {**at, "type": "agent.step.completed", "message_id": f"h{self.n}", "content": ""}
        return [{**step, "tool_calls": [{"id": call, "name": "read_file"}]}]

    def _burst(self, at: dict, index: int) -> list[dict]:
        """A batched ingest changing more messages than a frame's first tail holds."""
        return [event for _ in range(12) for event in self._start(at, index + 1)]

    def _start(self, at: dict, index: int) -> list[dict]:
        parent = self._call(index)
        new = f"c{self.n}-{len(self.calls)}"
        self.calls.append(new)
        started = {**at, "type": "agent.tool.started", "tool_call_id": new, "tool_name": "read"}
        if parent is not None and index % 3 == 0:
            started["parent_tool_call_id"] = parent  # G13
        return [started]

    def _progress(self, at: dict, index: int) -> list[dict]:
        call = self._call(index)
        if call is None:
            return self._start(at, index)
        return [{**at, "type": "agent.tool.progress", "tool_call_id": call, "output": "line\n"}]

    def _ok(self, at: dict, index: int) -> list[dict]:
        return self._done(at, index, {"result": f"ok {self.n}"})

    def _error(self, at: dict, index: int) -> list[dict]:
        return self._done(at, index, {"error": f"failed {self.n}"})

    def _done(self, at: dict, index: int, outcome: dict) -> list[dict]:
        call = self._call(index)
        if call is None:
            return self._start(at, index)
        return [{**at, "type": "agent.tool.completed", "tool_call_id": call, **outcome}]

    def _call(self, index: int) -> str | None:
        return self.calls[index % len(self.calls)] if self.calls else None
