"""Standard lengths (and the extended 256K / 512K), config names, and the packers every family uses.

Every packer works on an ordered list of *units* (pages, passages, images, demonstration shots ...)
and an exact ``measure(selection) -> tokens`` callback that builds the whole example from a
selection and counts it with the unified counter. Packers only rely on ``measure`` being
monotone (more units, more tokens), which holds for concatenated prompts; an optional additive
``estimate`` only speeds up the search.

The invariant every built example satisfies, whatever the packer:

    num_tokens <= length < next_num_tokens

where ``next_num_tokens`` is the count had the next available unit been added (``None`` when the
source had no unit left; builders treat that as "too little source material for this length").
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Generic, Optional, Sequence, TypeVar

T = TypeVar("T")

DEPTHS: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)

LENGTHS: dict[str, int] = {"8k": 8192, "16k": 16384, "32k": 32768, "64k": 65536, "128k": 131072}
LENGTH_KEYS: tuple[str, ...] = tuple(LENGTHS)
#: beyond the papers: the lengths of MMLongBench's extended release (VLMEvalKit ``MMLongBench_256K``
#: and ``_512K``). Only the families with material for them (MMLongBench's) declare these configs, so
#: ``LENGTHS`` stays the five lengths every family and paper table shares.
EXTENDED_LENGTHS: dict[str, int] = {"256k": 262144, "512k": 524288}
EXTENDED_LENGTH_KEYS: tuple[str, ...] = tuple(EXTENDED_LENGTHS)
ALL_LENGTHS: dict[str, int] = {**LENGTHS, **EXTENDED_LENGTHS}

_LENGTH_SUFFIX = re.compile(r"^(?P<dataset>.+?)_(?P<length>\d+k)$")


def length_tokens(key: str) -> int:
    """``"128k"`` -> 131072."""
    try:
        return ALL_LENGTHS[key.lower()]
    except KeyError:
        raise ValueError(f"unknown length {key!r}; standard lengths are {', '.join(ALL_LENGTHS)}") from None


def normalize_config_name(name: str) -> str:
    """Accept hyphenated dataset keys as aliases: ``vh-single_128k`` -> ``vh_single_128k``."""
    return name.strip().lower().replace("-", "_")


def parse_config_name(name: str) -> tuple[str, Optional[str]]:
    """``"vh_single_128k"`` -> ``("vh_single", "128k")``; names without a standard length -> None."""
    name = normalize_config_name(name)
    match = _LENGTH_SUFFIX.match(name)
    if match and match.group("length") in ALL_LENGTHS:
        return match.group("dataset"), match.group("length")
    return name, None


class BudgetError(ValueError):
    """Even the smallest admissible selection exceeds the budget."""


@dataclass(frozen=True)
class Packed(Generic[T]):
    """A packer's answer: the kept units and both numbers of the invariant."""

    items: list[T]
    num_tokens: int
    next_num_tokens: Optional[int]

    @property
    def exhausted(self) -> bool:
        """True when no unit was left to add: the budget may be far from full."""
        return self.next_num_tokens is None


class _Memo:
    """Exact measure of ``choose(k)`` memoised by ``k`` (each call may encode a long prompt)."""

    def __init__(self, choose: Callable[[int], list], measure: Callable[[list], int]):
        self.choose, self.measure, self.cache = choose, measure, {}

    def __call__(self, k: int) -> int:
        if k not in self.cache:
            self.cache[k] = self.measure(self.choose(k))
        return self.cache[k]


def _largest_fitting(memo: _Memo, n: int, budget: int, guess: int) -> int:
    """Largest ``k`` in [0, n] with ``memo(k) <= budget``, given monotone ``memo``.

    Checks the guess and its successor first (two exact counts when the estimate is good), then
    gallops and bisects.
    """
    if memo(0) > budget:
        raise BudgetError(f"the fixed part of the example alone takes {memo(0)} tokens > budget {budget}")
    guess = min(max(guess, 0), n)
    if memo(guess) <= budget:
        if guess == n or memo(guess + 1) > budget:
            return guess
        lo, step = guess + 1, 1  # memo(lo) <= budget; gallop up
        while lo + step <= n and memo(lo + step) <= budget:
            lo, step = lo + step, step * 2
        hi = min(n + 1, lo + step)  # memo(hi) > budget or hi == n + 1
    else:
        hi, step = guess, 1  # memo(hi) > budget; gallop down
        while hi - step > 0 and memo(hi - step) > budget:
            hi, step = hi - step, step * 2
        lo = max(0, hi - step)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if memo(mid) <= budget:
            lo = mid
        else:
            hi = mid
    return lo


def _estimate_count(units: Sequence[T], budget: int, base: int, estimate: Callable[[T], int]) -> int:
    total, k = base, 0
    for unit in units:
        total += estimate(unit)
        if total > budget:
            break
        k += 1
    return k


def fill(
    units: Sequence[T],
    budget: int,
    measure: Callable[[list[T]], int],
    *,
    estimate: Optional[Callable[[T], int]] = None,
) -> Packed[T]:
    """Fill to budget: keep the longest prefix of ``units`` that fits.

    Adds units in order until the next one would exceed ``budget``. ``measure([])`` is the cost
    of the fixed part (instruction, question, needles); it must fit on its own.
    """
    units = list(units)
    memo = _Memo(lambda k: units[:k], measure)
    guess = _estimate_count(units, budget, memo(0), estimate) if estimate else 0
    k = _largest_fitting(memo, len(units), budget, guess)
    return Packed(units[:k], memo(k), memo(k + 1) if k < len(units) else None)


def truncate_end(
    units: Sequence[T],
    budget: int,
    measure: Callable[[list[T]], int],
    *,
    estimate: Optional[Callable[[T], int]] = None,
) -> Packed[T]:
    """Truncate from the end: the same rule as :func:`fill`, read as dropping the tail."""
    return fill(units, budget, measure, estimate=estimate)


def _even_removal_order(n: int, first_required: int, last_required: int) -> list[tuple[str, int]]:
    """Removal order for even truncation: alternately the leftmost and rightmost removable unit."""
    left = list(range(0, first_required))
    right = list(range(n - 1, last_required, -1))
    order, take_left = [], True
    while left or right:
        if (take_left and left) or not right:
            order.append(("L", left.pop(0)))
        else:
            order.append(("R", right.pop(0)))
        take_left = not take_left
    return order


def truncate_even(
    units: Sequence[T],
    budget: int,
    measure: Callable[[list[T]], int],
    *,
    required: Sequence[int] = (),
) -> Packed[T]:
    """Truncate evenly from both sides while keeping every ``required`` unit (by index).

    Units are removed alternately from the left and the right end (a side with nothing removable
    left is skipped), so the kept window stays centred on the required units. The result is the
    widest such window that fits; ``next_num_tokens`` is the count with the last removed unit put
    back.
    """
    units = list(units)
    n = len(units)
    if required:
        first, last = min(required), max(required)
        if first < 0 or last >= n:
            raise IndexError(f"required unit index out of range 0..{n - 1}: {sorted(required)}")
    else:
        first, last = n, n - 1  # nothing required: everything is removable (from the left first)
    order = _even_removal_order(n, min(first, n), last)

    def window(removed: int) -> list[T]:
        lo = sum(1 for side, _ in order[:removed] if side == "L")
        hi = n - sum(1 for side, _ in order[:removed] if side == "R")
        return units[lo:hi]

    # keep(k) = window after removing all but k of the removable units; monotone in k.
    total = len(order)
    memo = _Memo(lambda keep: window(total - keep), measure)
    keep = _largest_fitting(memo, total, budget, total)
    items = window(total - keep)
    return Packed(items, memo(keep), memo(keep + 1) if keep < total else None)


def depth_index(depth: float, total: int) -> int:
    """Position of a needle at ``depth`` in a list of ``total`` items (0 = first, 1 = last)."""
    return int(round(depth * (total - 1)))


def place_at(fillers: Sequence[T], inserts: Sequence[T], positions: Sequence[int]) -> list[T]:
    """The list with ``inserts[i]`` at ``positions[i]`` and the fillers, in order, everywhere else.

    Needle placement for every family: distractor images around needle images (VH), retrieved
    passages around gold passages (visual RAG), ...
    """
    total = len(fillers) + len(inserts)
    at = dict(zip(positions, inserts))
    if len(at) != len(inserts) or any(not 0 <= p < total for p in at):
        raise ValueError(f"positions {list(positions)} do not fit {len(inserts)} inserts in {total} items")
    rest = iter(fillers)
    return [at[i] if i in at else next(rest) for i in range(total)]
