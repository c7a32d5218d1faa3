"""Packers: the invariant num_tokens <= L < next_num_tokens on adversarial measures."""
from __future__ import annotations

import random

import pytest

from mmlbdata.core.lengths import (
    BudgetError, fill, length_tokens, parse_config_name, truncate_end, truncate_even,
)


def test_config_names():
    assert parse_config_name("vh_single_128k") == ("vh_single", "128k")
    assert parse_config_name("vh-single_128k") == ("vh_single", "128k")
    assert parse_config_name("mmneedle_m10_n4_k1") == ("mmneedle_m10_n4_k1", None)
    assert length_tokens("8k") == 8192 and length_tokens("128K") == 131072
    with pytest.raises(ValueError, match="standard lengths"):
        length_tokens("100k")


def _measure(costs, fixed, joiner_cost):
    """Non-additive on purpose: each unit after the first costs a joiner too."""
    def measure(selection):
        return fixed + sum(costs[i] for i in selection) + joiner_cost * max(0, len(selection) - 1)
    return measure


@pytest.mark.parametrize("seed", range(40))
def test_fill_invariant_with_bad_estimates(seed):
    rng = random.Random(seed)
    costs = [rng.randint(1, 500) for _ in range(rng.randint(0, 60))]
    units = list(range(len(costs)))
    fixed, budget = rng.randint(0, 200), rng.randint(200, 8000)
    measure = _measure(costs, fixed, rng.randint(0, 5))
    # the estimate is deliberately wrong by a random factor: the result must still be exact
    factor = rng.choice([0.1, 0.5, 1.0, 2.0, 10.0])
    packed = fill(units, budget, measure, estimate=lambda u: int(costs[u] * factor))
    k = len(packed.items)
    assert packed.items == units[:k]
    assert packed.num_tokens == measure(packed.items) <= budget
    if k < len(units):
        assert packed.next_num_tokens == measure(units[:k + 1]) > budget
    else:
        assert packed.next_num_tokens is None and packed.exhausted


def test_fill_rejects_an_oversized_fixed_part():
    with pytest.raises(BudgetError, match="fixed part"):
        fill([1, 2], 10, lambda sel: 11 + len(sel))


def test_truncate_end_keeps_the_head():
    packed = truncate_end(list("abcdef"), 3, lambda sel: len(sel))
    assert packed.items == list("abc") and packed.next_num_tokens == 4


@pytest.mark.parametrize("seed", range(40))
def test_truncate_even_keeps_required_and_is_centred(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 50)
    costs = [rng.randint(1, 300) for _ in range(n)]
    required = sorted(rng.sample(range(n), rng.randint(0, min(3, n))))
    measure = _measure(costs, 10, 1)
    floor = measure(list(range(min(required), max(required) + 1))) if required else measure([])
    budget = rng.randint(floor, floor + 6000)
    packed = truncate_even(list(range(n)), budget, measure, required=required)
    kept = packed.items
    assert kept == list(range(kept[0], kept[-1] + 1)) if kept else not required
    assert set(required) <= set(kept)
    assert packed.num_tokens == measure(kept) <= budget
    if len(kept) < n:
        assert packed.next_num_tokens is not None and packed.next_num_tokens > budget
        # removals alternate: the sides differ by at most one while neither is stopped by a required unit
        if required:
            removed_left, removed_right = kept[0], n - 1 - kept[-1]
            left_open, right_open = removed_left < min(required), removed_right < n - 1 - max(required)
            if left_open and right_open:
                assert abs(removed_left - removed_right) <= 1
            elif left_open:  # the right side is exhausted: the left removed at least as many
                assert removed_left >= removed_right - 1
    else:
        assert packed.next_num_tokens is None


def test_truncate_even_alternates_left_then_right():
    packed = truncate_even(list(range(10)), 6, lambda sel: len(sel), required=[5])
    assert packed.items == [2, 3, 4, 5, 6, 7]  # removed 0 (L), 9 (R), 1 (L), 8 (R)
    assert packed.next_num_tokens == 7


def test_truncate_even_when_required_span_does_not_fit():
    with pytest.raises(BudgetError):
        truncate_even(list(range(10)), 2, lambda sel: len(sel), required=[1, 8])


def test_place_at_and_depth_index():
    from mmlbdata.core.lengths import depth_index, place_at

    assert [depth_index(d, 11) for d in (0, 0.2, 0.5, 1.0)] == [0, 2, 5, 10]
    assert place_at(list("abcd"), ["X", "Y"], [0, 5]) == ["X", "a", "b", "c", "d", "Y"]
    assert place_at(list("ab"), ["X"], [1]) == ["a", "X", "b"]
    with pytest.raises(ValueError, match="do not fit"):
        place_at(list("ab"), ["X", "Y"], [1, 1])
    with pytest.raises(ValueError, match="do not fit"):
        place_at(list("ab"), ["X"], [3])


def test_extended_lengths_parse_but_stay_out_of_the_five():
    from mmlbdata.core.lengths import ALL_LENGTHS, EXTENDED_LENGTHS, LENGTHS, length_tokens, parse_config_name

    assert parse_config_name("vh_single_512k") == ("vh_single", "512k")
    assert parse_config_name("gov_report_256k") == ("gov_report", "256k")
    assert length_tokens("256k") == 262144 and length_tokens("512K") == 524288
    assert "256k" not in LENGTHS and EXTENDED_LENGTHS == {"256k": 262144, "512k": 524288}
    assert list(ALL_LENGTHS) == ["8k", "16k", "32k", "64k", "128k", "256k", "512k"]
    assert parse_config_name("vh_single_1024k") == ("vh_single_1024k", None)


def test_the_length_benchmarks_source_is_coco_like_and_distinct(tmp_path):
    """benchmarks/bench_lengths.py: every generated file distinct (the store keeps one copy per content),
    640x480 by its header, read by the COCO reader with its categories."""
    from benchmarks.bench_lengths import make_coco_like
    from mmlbdata.core.report import BuildReport
    from mmlbdata.sources.coco import read_instances
    from mmlbdata.core.store import ImageStore

    root = make_coco_like(tmp_path / "coco", 12, small=True)
    images = read_instances(root, ImageStore(tmp_path / "store"), BuildReport())
    assert len(images) == 12 and len({img.ref.name for img in images}) == 12
    assert all((img.ref.width, img.ref.height) == (640, 480) and 1 <= len(img.categories) <= 3 for img in images)
