"""bench/hf/alloc_history.py reads the caching allocator's history: the blocks alive at the
allocated peak, and which allocations grew the reserved memory. A hand-made history checks both."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "hf"))
import alloc_history  # noqa: E402


def frame(name, line):
    return {"filename": f"/x/{name}.py", "line": line, "name": "forward"}


def history():
    # a (40) and b (30) alive together make the peak (70); a's segment (64) is taken first, b's
    # (32) while 40 is allocated; a is freed, then c (20) fits in a's freed segment.
    return {"device_traces": [[
        {"action": "segment_alloc", "addr": 0, "size": 64, "frames": [frame("linear", 134)]},
        {"action": "alloc", "addr": 0, "size": 40, "frames": [frame("linear", 134)]},
        {"action": "segment_alloc", "addr": 100, "size": 32, "frames": [frame("layer", 1102), {"filename": "<C++>"}]},
        {"action": "alloc", "addr": 100, "size": 30, "frames": [frame("layer", 1102)]},
        {"action": "free_requested", "addr": 0, "size": 40},
        {"action": "free_completed", "addr": 0, "size": 40},
        {"action": "alloc", "addr": 0, "size": 20, "frames": []},
    ]], "segments": [
        {"total_size": 64, "allocated_size": 20, "blocks": [{"size": 20, "state": "active_allocated"},
                                                            {"size": 44, "state": "inactive"}]},
        {"total_size": 32, "allocated_size": 30, "blocks": [{"size": 30, "state": "active_allocated"},
                                                            {"size": 2, "state": "inactive"}]},
    ]}


def test_live_at_peak_is_the_set_alive_when_allocated_was_highest():
    peak, blocks = alloc_history.live_at_peak(history())
    assert peak == 70
    assert [b["size"] for b in blocks] == [40, 30]


def test_segment_summary_says_what_grew_reserved_and_what_was_alive_at_the_peak():
    s = alloc_history.segment_summary(history())
    assert [(g["size"], g["allocated"], g["reserved"]) for g in s["segment_allocs"]] == [(64, 0, 64), (32, 40, 96)]
    assert s["segment_allocs"][1]["frames"] == ["layer.py:1102:forward"]  # Python frames only
    assert s["allocated_peak"] == 70
    assert s["live_at_peak"] == [{"frames": "linear.py:134:forward", "blocks": 1, "bytes": 40},
                                 {"frames": "layer.py:1102:forward", "blocks": 1, "bytes": 30}]
    assert [(g["size"], g["free_blocks"]) for g in s["segments"]] == [(64, [44]), (32, [2])]
