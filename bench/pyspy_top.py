"""Summarise a py-spy `--format raw` (collapsed stacks) file: where daphne's time goes.

    .venv/bin/python bench/pyspy_top.py PROFILE.txt [--top 30] [--match chatui/]

Prints the functions with the most inclusive samples (the function or anything it
called was on the stack) and with the most self samples (on top of the stack),
as a share of all samples. `--match` keeps only frames whose file contains the
text (e.g. `chatui/` for the app's own functions) in the inclusive table.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>.*?)(?::(?P<line>\d+))?\)$")


def short(frame: str) -> str:
    match = FRAME.match(frame)
    if not match:
        return frame
    path = match.group("file")
    for cut in ("site-packages/", "/work/main/", "lib/python3.11/"):
        if cut in path:
            path = path.split(cut, 1)[1]
    return f"{match.group('func')} ({path})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--match", default="")
    parser.add_argument(
        "--within",
        default="",
        help="only count stacks holding a frame with this text (e.g. ContentSecurityPolicy"
        "Middleware for the request-handling threads)",
    )
    parser.add_argument(
        "--share",
        nargs="*",
        default=[],
        help="texts: print the share of (selected) samples whose stack holds each",
    )
    args = parser.parse_args()
    shares: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in Path(args.profile).read_text().splitlines():
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples = int(count)
        frames = [f for f in stack.split(";") if not f.startswith(("process ", "thread "))]
        frames = [short(f) for f in frames]
        if args.within and not any(args.within in f for f in frames):
            continue
        total += samples
        for text in args.share:
            if any(text in f for f in frames):
                shares[text] += samples
        for name in set(frames):
            if args.match in name:
                inclusive[name] += samples
        if frames:
            own[frames[-1]] += samples
    print(f"{total} samples" + (f" with {args.within!r} on the stack" if args.within else ""))
    if args.share:
        print("\nshare of those samples whose stack holds:")
        for text in args.share:
            print(f"{100 * shares[text] / max(total, 1):6.1f}%  {text}")
    print("\ninclusive (function and its callees):")
    for name, samples in inclusive.most_common(args.top):
        print(f"{100 * samples / total:6.1f}%  {name}")
    print("\nself (on top of the stack):")
    for name, samples in own.most_common(args.top):
        print(f"{100 * samples / total:6.1f}%  {name}")


if __name__ == "__main__":
    main()
