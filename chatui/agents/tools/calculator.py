"""`calculate`'s evaluator: parsed with `ast`, a whitelist of operations, bounded
operands (no `eval`).
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from .base import ToolError

# -- the calculator: ast, a whitelist, bounds ----------------------------------------
#
# Every number stays within ±10^100, and every operation whose result could leave
# that range is refused from its operands' sizes *before* it is computed: Python
# computes `10**10**9`, `round(5, -10**7)` (10^(10^7) inside) or a product of two
# huge numbers in one C call that holds the GIL, so no thread, timeout or Stop
# could cut it short once it began.

MAX_EXPRESSION_CHARS = 300
MAX_MAGNITUDE = 10**100
MAX_EXPONENT = 1000
MAX_ROUND_DIGITS = 100
TOO_LARGE = "the result would be too large (the calculator works up to 10^100)"

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_NAMES = {"pi": math.pi, "e": math.e, "tau": math.tau}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "floor": math.floor,
    "ceil": math.ceil,
    "log": math.log,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
}


def safe_eval(expression: str) -> int | float:
    """Evaluate arithmetic without eval: parse to an AST and walk a whitelist."""
    text = expression.strip().replace("^", "**").replace("×", "*").replace("÷", "/")
    if not text:
        raise ToolError("the expression is empty")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError):  # ValueError: e.g. a NUL character
        raise ToolError(f"not an arithmetic expression: {expression}") from None
    except (RecursionError, MemoryError):
        raise ToolError("the expression is nested too deeply") from None
    try:
        value = _evaluate(tree.body)
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except RecursionError:
        raise ToolError("the expression is nested too deeply") from None
    except (ValueError, OverflowError, TypeError) as problem:
        raise ToolError(f"cannot evaluate {expression}: {problem}") from None
    return value


def _evaluate(node: ast.AST) -> int | float:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, int | float) and not isinstance(node.value, bool):
            return _bounded(node.value)
        raise ToolError(f"not a number: {node.value!r}"[:80])
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        elif isinstance(node.op, ast.Mult):
            _check_product(left, right)
        return _bounded(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
        and node.args
    ):
        args = [_evaluate(arg) for arg in node.args]
        if node.func.id == "round":
            _check_round(args)
        return _bounded(_FUNCTIONS[node.func.id](*args))
    raise ToolError(f"not allowed in an expression: {ast.unparse(node)[:60]}")


def _check_power(base: int | float, exponent: int | float) -> None:
    if abs(exponent) > MAX_EXPONENT or (
        abs(base) > 1 and abs(exponent) * math.log10(abs(base)) > math.log10(MAX_MAGNITUDE)
    ):
        raise ToolError(TOO_LARGE)


def _check_product(left: int | float, right: int | float) -> None:
    """An integer product's size is known from its factors' bit lengths."""
    bits = MAX_MAGNITUDE.bit_length() + 1
    if (
        isinstance(left, int)
        and isinstance(right, int)
        and left.bit_length() + right.bit_length() > bits
    ):
        raise ToolError(TOO_LARGE)


def _check_round(args: list[int | float]) -> None:
    """round(x, -n) computes 10**n inside: `round(5, -10**7)` would take seconds."""
    if len(args) == 2 and isinstance(args[1], int) and abs(args[1]) > MAX_ROUND_DIGITS:
        raise ToolError(f"round() takes at most {MAX_ROUND_DIGITS} digits")


def _bounded(value: Any) -> int | float:
    if isinstance(value, complex):
        raise ToolError("the result is not a real number")
    if isinstance(value, float) and math.isnan(value):
        raise ToolError("the result is not a number")
    if isinstance(value, int | float) and abs(value) > MAX_MAGNITUDE:
        raise ToolError(TOO_LARGE)
    return value


def format_number(value: int | float) -> str:
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.12g}"
    return str(value)
