"""The fleet simulator: the hub's placement logic against modelled workers."""

from __future__ import annotations

from core.engine.dispatch.placement_policy import PlacementPolicy
from core.engine.simulator.fleet import FleetScenario, FleetSimulation, JobShape, simulate_fleet


def test_every_job_is_admitted_once_and_spread_shares_the_stream() -> None:
    small = (JobShape(pods=1, gpus_per_pod=1),)
    spread = simulate_fleet(FleetScenario(workers=4, jobs=200, shapes=small))
    assert spread.admitted == 200 and sum(spread.per_worker) == 200
    assert spread.withdrawals == 0
    fewest, most = spread.spread
    assert most - fewest <= 10
    piled = simulate_fleet(
        FleetScenario(workers=4, jobs=200, shapes=small, policy=PlacementPolicy.CONFIG_ORDER)
    )
    assert piled.admitted == 200
    assert piled.per_worker[0] > 2 * piled.per_worker[-1]


def test_claims_keep_a_burst_within_each_workers_room() -> None:
    # 64 jobs of 8 GPUs faster than any report: exactly 8 fit on each of the 8 workers,
    # so no nomination may wait on a worker that a claim has already filled.
    scenario = FleetScenario(
        workers=8,
        jobs=64,
        shapes=(JobShape(pods=1, gpus_per_pod=8),),
        load=50.0,
        report_interval_s=30.0,
    )
    result = simulate_fleet(scenario)
    assert result.per_worker == [8] * 8
    assert result.withdrawals == 0
    assert result.wait_p99_s is not None and result.wait_p99_s < 1.0


def test_the_same_scenario_gives_the_same_result() -> None:
    scenario = FleetScenario(workers=3, jobs=150)
    assert simulate_fleet(scenario) == simulate_fleet(scenario)


def test_cached_verdicts_change_no_decision() -> None:
    for policy in PlacementPolicy:
        scenario = FleetScenario(workers=6, jobs=400, policy=policy)
        simulation = FleetSimulation(scenario)
        cached = simulation.run()
        assert simulation.fit_cache is not None and simulation.fit_cache.hits > 0
        assert cached == simulate_fleet(scenario, fit_cache=False)
