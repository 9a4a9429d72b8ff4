"""axe-core (bundled by axe-playwright-python) on a real page: docs/rendering.md#accessibility's bar
is no violation of serious or critical impact. The failure lists every offending rule with
its nodes, so the fix is obvious from the test output."""

from __future__ import annotations

from typing import Any

from axe_playwright_python.sync_playwright import Axe

BLOCKING = ("serious", "critical")

_axe = Axe()


def serious_violations(page: Any) -> list[dict[str, Any]]:
    """axe's violations on `page` whose impact is serious or critical."""
    results = _axe.run(page)
    return [v for v in results.response["violations"] if v.get("impact") in BLOCKING]


def describe(violations: list[dict[str, Any]]) -> str:
    lines = []
    for violation in violations:
        lines.append(f"{violation['id']} ({violation['impact']}): {violation['help']}")
        for node in violation["nodes"][:8]:
            target = " ".join(str(part) for part in node.get("target", []))
            lines.append(f"    {target}: {node.get('failureSummary', '').splitlines()[-1:]}")
    return "\n".join(lines)


def assert_no_serious_violations(page: Any, where: str = "") -> None:
    """Fail with a readable list when axe finds a serious or critical violation."""
    found = serious_violations(page)
    assert not found, f"axe on {where or page.url}:\n{describe(found)}"
