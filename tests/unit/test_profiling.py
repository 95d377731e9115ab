"""The time breakdown of `icgd verify`: exclusive sections, nothing recorded outside an active profile."""

import time

from icgd.core.profiling import Profile, format_breakdown, section, summarize, timed


def test_nested_sections_count_each_second_once():
    prof = Profile()
    with prof.active():
        prof.experiment = "e"
        with section("analysis (rest)"):
            time.sleep(0.02)
            with section("train steps", "m"):
                time.sleep(0.05)
                with section("train evaluation", "m"):
                    time.sleep(0.03)
    s = {(r["section"], r["detail"]): r["seconds"] for r in prof.rows()}
    assert 0.045 <= s[("train steps", "m")] < 0.075  # the evaluation's 0.03 s are not counted twice
    assert 0.025 <= s[("train evaluation", "m")] < 0.05
    assert 0.015 <= s[("analysis (rest)", "")] < 0.045
    summary = summarize(prof.rows())
    assert summary["trained"][0]["model"] == "m" and summary["trained"][0]["seconds"] >= 0.07
    assert "train steps" in format_breakdown(summary)


def test_sections_record_nothing_without_an_active_profile():
    prof = Profile()

    @timed("evaluate")
    def f(x):
        return x + 1

    assert f(1) == 2
    with section("evaluate"):
        pass
    assert prof.rows() == []
    with prof.active():
        f(1)
    assert [r["section"] for r in prof.rows()] == ["evaluate"]
