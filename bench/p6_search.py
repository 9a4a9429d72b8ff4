"""P6: full-text search over 100,000 messages — server time of `GET /?q=…` (docs/PERFORMANCE.md,
docs/rendering.md#search).

    .venv/bin/python bench/p6_search.py [--messages 100000] [--conversations 500] [--requests 40]

The corpus is built through the ingest API in batches (`--runs-per-request` agent runs
per request), not bulk-inserted: the index is then exactly what ingest keeps in
production — written batch by batch inside the ingest transactions, so FTS5 holds many
incremental segments as a live database does, rather than one freshly merged build
that would flatter the queries. Half the conversations belong to the logged-in user
and half to another user, so an owner's search filters out half of what matches.

Each agent run is 5 messages, as in P3: a user message, a step (prose + two tool
calls), the two tool calls (args and a multi-line result) and a final answer. The
prose draws words from a synthetic 5,000-word vocabulary with a long-tailed frequency,
so the index has a realistic spread of common and rare terms. Planted words:

- rare:   "quokka" in 20 user messages across the corpus;
- common: "module", in every tool result (two fifths of all messages);
- args:   "argonaut", only in the path argument of one tool call in 25 runs;
- prefix: "refact", matching "refactor", "refactoring", "refactored" in 1 answer in 20;
- phrase: "failing test", a two-word phrase in every final answer;
- none:   a word no message holds.

Then, logged in through the real login form (as the owner, and as an auditor who sees
every conversation), it times each query on a keep-alive connection, round-robin so
load drift hits all alike, after a few unmeasured warm-up requests. Server time is
measured client-side on loopback (request sent → whole body read; ~1 ms of it is
loopback HTTP and httpx); the daphne CPU column is daphne's CPU time per request.
"""

from __future__ import annotations

import argparse
import random
import re
import time

import httpx
from common import (
    REQUEST_COLUMNS,
    TOOL_OUTPUT,
    Bench,
    cpu_seconds,
    loadavg,
    machine_line,
    request_row,
    table,
)

MESSAGES_PER_RUN = 5
OTHER = ("p6-other", "p6-other-password-1")
AUDITOR = ("p6-auditor", "p6-auditor-password-1")
QUERIES = {
    "rare word": "quokka",
    "common word": "module",
    "word only in tool args": "argonaut",
    "prefix": "refact",
    "common phrase": "failing test",
    "no match": "zyzzyvaqx",
}
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "zu", "pe", "do", "ga", "hi", "ju"]


def vocabulary(rng: random.Random, size: int = 5000) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def prose(rng: random.Random, vocab: list[str], n: int) -> str:
    """`n` words, long-tailed: a few words are everywhere, most are rare."""
    picks = (vocab[min(len(vocab) - 1, int(rng.paretovariate(0.8)) - 1)] for _ in range(n))
    return " ".join(picks)


def run_events(run: int, rng: random.Random, vocab: list[str], rare_runs: set[int]) -> list[dict]:
    run_id = f"r{run}"
    path = f"src/argonaut/m{run}.py" if run % 25 == 0 else f"src/pkg{run % 40}/m{run}.py"
    calls = [
        {"id": f"{run_id}-t0", "name": "read_file", "args": {"path": path}},
        {"id": f"{run_id}-t1", "name": "run_cmd", "args": {"cmd": f"pytest -k case{run}"}},
    ]
    ask = f"Please look at issue #{run}: {prose(rng, vocab, 12)}"
    if run in rare_runs:
        ask += " (the quokka one)"
    answer = f"The failing test is fixed. {prose(rng, vocab, 40)}"
    if run % 20 == 0:
        answer += " I refactored the loader; a bigger refactor or refactoring can wait."
    events = [
        {"type": "user.message", "run_id": run_id, "content": ask},
        {"type": "agent.status", "run_id": run_id, "status": "running"},
        {
            "type": "agent.step.completed",
            "run_id": run_id,
            "message_id": f"{run_id}-a",
            "content": f"I will read the file and run the tests. {prose(rng, vocab, 15)}",
            "tool_calls": calls,
        },
    ]
    for call in calls:
        events += [
            {
                "type": "agent.tool.started",
                "run_id": run_id,
                "tool_call_id": call["id"],
                "tool_name": call["name"],
                "args": call["args"],
            },
            {
                "type": "agent.tool.completed",
                "run_id": run_id,
                "tool_call_id": call["id"],
                "result": TOOL_OUTPUT,
            },
        ]
    events += [
        {"type": "agent.step.completed", "run_id": run_id, "message_id": f"{run_id}-b",
         "content": answer},
        {"type": "agent.status", "run_id": run_id, "status": "completed"},
    ]  # fmt: skip
    return events


def add_users(bench: Bench) -> str:
    """The other owner (returns its API token) and the auditor."""
    bench.server.manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import Permission, User;"
        f"User.objects.create_user({OTHER[0]!r}, password={OTHER[1]!r});"
        f"auditor = User.objects.create_user({AUDITOR[0]!r}, password={AUDITOR[1]!r});"
        "auditor.user_permissions.add(Permission.objects.get(codename='view_conversation'))",
    )
    return bench.server.manage("create_api_token", OTHER[0]).strip().splitlines()[-1]


def build(bench: Bench, messages: int, conversations: int, per_request: int) -> tuple[float, int]:
    """The corpus; returns the build time and the number of ingest requests."""
    rng = random.Random(6)
    vocab = vocabulary(rng)
    runs = messages // MESSAGES_PER_RUN
    rare_runs = set(rng.sample(range(runs), 20))
    other_token = add_users(bench)
    runs_each = runs // conversations
    requests = 0
    started = time.perf_counter()
    clients = [
        bench.api(),
        httpx.Client(
            base_url=bench.url + "/api/v1",
            headers={"Authorization": f"Bearer {other_token}"},
            timeout=60,
        ),
    ]
    try:
        for index in range(conversations):
            client = clients[index % 2]
            created = client.post("/conversations", json={"title": f"p6 conversation {index}"})
            created.raise_for_status()
            conversation = created.json()["id"]
            first_run = index * runs_each
            for start in range(first_run, first_run + runs_each, per_request):
                events = []
                for run in range(start, min(first_run + runs_each, start + per_request)):
                    events += run_events(run, rng, vocab, rare_runs)
                response = client.post(
                    f"/conversations/{conversation}/events", json={"events": events}
                )
                response.raise_for_status()
                requests += 1
    finally:
        for client in clients:
            client.close()
    return time.perf_counter() - started, requests


def login(bench: Bench, username: str, password: str) -> dict[str, str]:
    """Cookies of a session logged in through the real login form."""
    name, _, value = bench.server.session_cookie(username, password).partition("=")
    return {name: value}


def measure(bench: Bench, viewers: dict[str, dict[str, str]], requests: int, warmup: int):
    keys = [(viewer, label) for viewer in viewers for label in QUERIES]
    times = {key: [] for key in keys}
    cpu = dict.fromkeys(keys, 0.0)
    shown = {}
    clients = {
        viewer: httpx.Client(base_url=bench.url, cookies=cookies, timeout=30)
        for viewer, cookies in viewers.items()
    }
    try:
        for round_ in range(warmup + requests):
            for viewer, label in keys:
                before_cpu = cpu_seconds(bench.pid)
                start = time.perf_counter()
                response = clients[viewer].get("/", params={"q": QUERIES[label]})
                took = time.perf_counter() - start
                spent = cpu_seconds(bench.pid) - before_cpu
                response.raise_for_status()
                if round_ >= warmup:
                    times[(viewer, label)].append(took * 1000)
                    cpu[(viewer, label)] += spent
                shown.setdefault(
                    (viewer, label),
                    (
                        response.text.count('class="search-group"'),
                        len(re.findall(r"<mark>", response.text)),
                        "More results" in response.text,
                    ),
                )
    finally:
        for client in clients.values():
            client.close()
    return times, cpu, shown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--requests", type=int, default=40, help="timed requests per query")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--runs-per-request", type=int, default=10, help="build batch size")
    args = parser.parse_args()

    print("P6 search ·", machine_line())
    with Bench() as bench:
        took, posts = build(bench, args.messages, args.conversations, args.runs_per_request)
        print(
            f"built {args.messages:,} messages in {args.conversations} conversations through "
            f"{posts} ingest requests in {took:.0f} s"
        )
        from tests.support.live import PASSWORD, USERNAME

        viewers = {"owner": login(bench, USERNAME, PASSWORD), "auditor": login(bench, *AUDITOR)}
        times, cpu, shown = measure(bench, viewers, args.requests, args.warmup)
        load = loadavg()

    rows = []
    for (viewer, label), values in times.items():
        groups, marks, more = shown[(viewer, label)]
        rows.append(
            request_row(
                f"{viewer}: {label} ({QUERIES[label]!r})",
                values,
                cpu[(viewer, label)],
                groups,
                marks,
                "yes" if more else "no",
            )
        )
    print(table(["GET /?q=", *REQUEST_COLUMNS, "conversations", "<mark>s", "more pages"], rows))
    print(f"load after: {load}")


if __name__ == "__main__":
    main()
