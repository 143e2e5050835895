"""bench/report.py's targets of this round: scenarios 1, 2, 3 and 5 within 0.03 of b6bbdbb's ratio to
the floor (by throughput and by CPU per request), scenario 4 at 0.95 x its floor, the JWT refresh
at 0.95 x the opaque one (issues 39, 40, 41)."""

from bench.report import RECORD_RATIOS, evaluate


def _summary(ratio: float, cpu_ratio: float) -> dict:
    """Every scenario at `ratio` x its floor by throughput and `cpu_ratio` x by CPU per request."""
    summary = {}
    for key in ("1", "2", "3", "4", "5"):
        summary[key] = {
            "floor": {"rps": 100.0, "cpu_app_ms": 1.0, "cpu_db_ms": 0.0},
            "project": {"rps": 100.0 * ratio, "cpu_app_ms": 1.0 / cpu_ratio, "cpu_db_ms": 0.0},
        }
    return summary


def _record_targets(summary) -> dict[str, bool]:
    return {t["target"].split()[1]: t["met"] for t in evaluate(summary) if "against b6bbdbb" in t["target"]}


def test_within_the_tolerance_of_the_record_is_met_and_below_it_is_missed():
    for key, (record, record_cpu) in RECORD_RATIOS.items():
        summary = _summary(record - 0.02, record_cpu - 0.02)
        assert _record_targets(summary)[key] is True, key
        summary = _summary(record - 0.05, record_cpu)
        assert _record_targets(summary)[key] is False, key  # by throughput
        summary = _summary(record, record_cpu - 0.05)
        assert _record_targets(summary)[key] is False, key  # by CPU alone


def test_the_full_flow_and_the_jwt_refresh_are_held_to_095():
    def met(what, summary):
        return next(t["met"] for t in evaluate(summary) if t["target"].startswith(what))

    assert met("Scenario 4 (full flow) vs floor", _summary(0.96, 0.96))
    assert not met("Scenario 4 (full flow) vs floor", _summary(0.93, 0.96))
    summary = _summary(1.0, 1.0)
    summary["2"]["jwt"] = {"rps": 96.0, "cpu_app_ms": 1.0 / 0.96, "cpu_db_ms": 0.0}
    assert met("Scenario 2 (refresh) issuing JWTs vs opaque", summary)
    summary["2"]["jwt"] = {"rps": 93.0, "cpu_app_ms": 1.0 / 0.96, "cpu_db_ms": 0.0}
    assert not met("Scenario 2 (refresh) issuing JWTs vs opaque", summary)


def _rounds_summary(flow_rounds: list[tuple[float, float]]) -> dict:
    """Every scenario at 1.0 x its floor in one round, and scenario 4 in rounds of
    (throughput ratio, CPU ratio)."""
    summary = _summary(1.0, 1.0)
    floor = [{"rps": 100.0, "cpu_app_ms": 1.0, "cpu_db_ms": 0.0} for _ in flow_rounds]
    project = [{"rps": 100.0 * rps, "cpu_app_ms": 1.0 / cpu, "cpu_db_ms": 0.0} for rps, cpu in flow_rounds]
    summary["4"] = {"floor": {**floor[0], "rounds": floor}, "project": {**project[0], "rounds": project}}
    return summary


def _flow_target(summary) -> dict:
    return next(t for t in evaluate(summary) if t["target"].startswith("Scenario 4 (full flow) vs floor"))


def test_a_ratio_measured_in_rounds_is_judged_on_their_mean():
    # The first round alone would miss (0.93); the mean of the three is 0.96 by throughput and CPU.
    target = _flow_target(_rounds_summary([(0.93, 0.94), (0.98, 0.97), (0.97, 0.97)]))
    assert target["met"] is True
    assert abs(target["value"] - 0.96) < 1e-9 and abs(target["cpu_ratio"] - (0.94 + 0.97 + 0.97) / 3) < 1e-9
    assert "mean of 3 rounds: 0.93, 0.98, 0.97" in target["measured"]
    # One round at 1.00 does not carry two below the bound: the mean is 0.94.
    assert _flow_target(_rounds_summary([(1.0, 1.0), (0.91, 0.96), (0.91, 0.96)]))["met"] is False
    # By CPU alone: throughput's mean 0.96, CPU's 0.94.
    assert _flow_target(_rounds_summary([(0.96, 0.93), (0.96, 0.95), (0.96, 0.94)]))["met"] is False


def test_summarize_keeps_the_first_round_for_the_table_and_every_round_for_the_mean():
    from bench.report import summarize

    def run(target, scenario, round_number, rps, tokens=1000):
        return {
            "target": target,
            "scenario": scenario,
            "tokens": tokens,
            "round": round_number,
            "cpu_app_ms": 1.0,
            "cpu_db_ms": 0.5,
            "requests": {"1 me": {"rps": rps, "failures": 0, "count": 10}},
        }

    # Listed out of order, and a grown database's run that is not one of the rounds.
    runs = [run("project", "1", 2, 300.0), run("project", "1", 0, 100.0), run("project", "1", 1, 200.0)]
    runs.append(run("project", "1", 0, 999.0, tokens=1_000_000))
    summary = summarize(runs, {"tokens": 1000, "grown_tokens": 1_000_000})
    assert summary["1"]["project"]["rps"] == 100.0
    assert [each["rps"] for each in summary["1"]["project"]["rounds"]] == [100.0, 200.0, 300.0]
    assert "rounds" not in summary["1M"]["project"]  # the grown comparison reads its one run
    # A results file from before the rounds (no "round" field) reads as one round: no mean.
    old = [{k: v for k, v in run("project", "1", 0, 100.0).items() if k != "round"}]
    assert summarize(old, {"tokens": 1000, "grown_tokens": 1_000_000})["1"]["project"]["rounds"][0]["rps"] == 100.0


def test_a_ratio_without_its_cpu_figure_is_not_met_on_throughput_alone():
    summary = _summary(1.0, 1.0)
    for side in summary["4"].values():
        side["cpu_app_ms"] = side["cpu_db_ms"] = None  # a run too short for its phases: no CPU read
    target = _flow_target(summary)
    assert target["value"] == 1.0 and target["cpu_ratio"] is None
    assert target["met"] is False
    # Rounds alike: one round without its CPU leaves the mean by CPU unread.
    summary = _rounds_summary([(1.0, 1.0), (1.0, 1.0), (1.0, 1.0)])
    summary["4"]["project"]["rounds"][1]["cpu_app_ms"] = None
    target = _flow_target(summary)
    assert "by CPU per request n/a (1.00, n/a, 1.00)" in target["measured"]
    assert target["met"] is False
