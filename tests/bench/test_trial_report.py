"""bench/report.py's floor trials (issue 31's bound) and the routes of a trial's targets (bench/run.py)."""

import pytest

from bench import report
from bench.run import FLOOR_TRIALS, OPERATIONS_TRIAL, routes_of


def side(rps: float, cpu_ms: float) -> dict:
    return {"rps": rps, "cpu_ms": cpu_ms, "queries": 4.0}


def trial(*, project, project_floor, trial, trial_floor, scenario="3") -> dict:
    return {
        "name": OPERATIONS_TRIAL,
        "scenario": scenario,
        "project": project,
        "trial": trial,
        "project_floor": project_floor,
        "trial_floor": trial_floor,
    }


def test_the_operations_trial_is_measured_against_the_floor():
    assert OPERATIONS_TRIAL in FLOOR_TRIALS


@pytest.mark.parametrize(
    ("target", "routes"),
    [
        ("base:9", "project"),
        ("trial:9", "project"),
        ("base-floor:9", "floor"),
        ("trial-floor:9", "floor"),
        ("floor", "floor"),
        ("project", "project"),
        ("jwt", "jwt"),
    ],
)
def test_routes_of_a_target(target, routes):
    assert routes_of(target) == routes


def test_floor_ratios_are_project_over_floor_on_each_server():
    measured = trial(
        project=side(200, 5.0), project_floor=side(210, 4.8), trial=side(190, 5.3), trial_floor=side(198, 5.1)
    )
    (before, before_cpu), (after, after_cpu) = report.floor_ratios(measured)
    assert before == pytest.approx(200 / 210)
    assert before_cpu == pytest.approx(4.8 / 5.0)
    assert after == pytest.approx(190 / 198)
    assert after_cpu == pytest.approx(5.1 / 5.3)


def test_a_trial_within_the_bound_is_met():
    # Both sides lose alike: the ratio to the floor holds (0.952 against 0.960).
    measured = trial(
        project=side(200, 5.0), project_floor=side(210, 4.8), trial=side(190, 5.3), trial_floor=side(198, 5.1)
    )
    [target] = report.floor_trial_targets([measured])
    assert target["met"] is True
    assert target["value"] == pytest.approx(190 / 198 - 200 / 210)
    assert "0.960 x against 0.952 x" in target["measured"] and "mean of 1 rounds" in target["measured"]


def test_the_bound_is_judged_on_the_mean_of_the_rounds():
    floor = side(200, 5.0)
    # Round 1 reads 0.05 below, round 2 0.03 above: 0.01 below on average, within the bound.
    low = trial(project=side(200, 5.0), project_floor=floor, trial=side(190, 5.263), trial_floor=floor)
    high = trial(project=side(200, 5.0), project_floor=floor, trial=side(206, 4.854), trial_floor=floor)
    [target] = report.floor_trial_targets([low, high])
    assert target["met"] is True
    assert target["value"] == pytest.approx(-0.01)
    assert "mean of 2 rounds; each by throughput: -0.05, +0.03" in target["measured"]
    # Two rounds both 0.04 below: missed.
    [target] = report.floor_trial_targets([low | {"trial": side(192, 5.21)}] * 2)
    assert target["met"] is False


def test_each_scenario_is_a_target_of_its_own():
    floor = side(200, 5.0)
    rounds = [
        trial(project=floor, project_floor=floor, trial=floor, trial_floor=floor, scenario=scenario)
        for scenario in ("2", "3", "2", "3", "4")
    ]
    targets = report.floor_trial_targets(rounds)
    assert [target["target"].split()[1] for target in targets] == ["2", "3", "4"]
    assert ["mean of 2 rounds" in t["measured"] for t in targets] == [True, True, False]


def test_a_trial_that_costs_the_token_endpoint_more_than_its_floor_is_missed():
    # The floor keeps its pace; the project loses 5 %: 0.905 against 0.952.
    measured = trial(
        project=side(200, 5.0), project_floor=side(210, 4.8), trial=side(190, 5.3), trial_floor=side(210, 4.8)
    )
    [target] = report.floor_trial_targets([measured])
    assert target["met"] is False


def test_a_trial_missed_by_cpu_alone_is_missed():
    # Throughput holds, CPU per request does not (0.85 against 0.96).
    measured = trial(
        project=side(200, 5.0), project_floor=side(210, 4.8), trial=side(200, 5.6), trial_floor=side(210, 4.76)
    )
    [target] = report.floor_trial_targets([measured])
    assert target["met"] is False


def test_an_unmeasured_floor_is_not_met():
    measured = trial(project=side(200, 5.0), project_floor=side(0, 0), trial=side(190, 5.3), trial_floor=side(198, 5.1))
    [target] = report.floor_trial_targets([measured])
    assert (target["met"], target["measured"], target["value"]) == (False, "n/a", None)


def test_trials_without_a_floor_have_no_target_and_no_floor_table():
    plain = {"name": "2 sync workers", "scenario": "1", "project": side(500, 2.0), "trial": side(450, 2.1)}
    assert report.floor_trial_targets([plain]) == []
    assert report.floor_trial_lines([plain]) == []
    lines = report.trial_lines({"trials": [plain]})
    assert not any("without: project / floor" in line for line in lines)


def test_the_trial_table_shows_the_floor_ratios():
    measured = trial(
        project=side(200, 5.0), project_floor=side(210, 4.8), trial=side(190, 5.3), trial_floor=side(198, 5.1)
    )
    lines = report.trial_lines({"trials": [measured]})
    [row] = [line for line in lines if line.startswith(f"| {OPERATIONS_TRIAL} | 3 | 0.95 x")]
    assert "0.96 x (0.96 x)" in row and "+0.01" in row
