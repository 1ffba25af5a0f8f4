"""The dispatch settings a Configuration file gives: upstream's fields and fleetq's own."""

from __future__ import annotations

import pytest

from core.engine.dispatch.placement_policy import PlacementPolicy
from core.manager.configuration import ConfigurationError, parse_configuration
from hub.multikueue.dispatch.settings import DispatchSettings


def settings(multikueue: dict[str, object]) -> DispatchSettings:
    loaded = parse_configuration({"multiKueue": multikueue})
    assert loaded.warnings == ()
    return DispatchSettings.from_configuration(loaded.configuration)


def test_incremental_and_capacity_aware_settings_come_from_the_file() -> None:
    got = settings(
        {
            "dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
            "incrementalDispatcherConfig": {"stepSize": 2, "roundTimeout": "45s"},
            "capacityAwareDispatcherConfig": {
                "nominationTimeout": "1m30s",
                "placementPolicy": "Pack",
            },
        }
    )
    assert (got.incremental_step_size, got.incremental_round_seconds) == (2, 45.0)
    assert got.nomination_timeout_seconds == 90.0
    assert got.placement_policy is PlacementPolicy.PACK


def test_without_them_the_defaults_hold() -> None:
    got = settings({})
    assert (got.incremental_step_size, got.incremental_round_seconds) == (3, 300.0)
    assert got.nomination_timeout_seconds == 60.0
    assert got.placement_policy is PlacementPolicy.SPREAD


def test_an_unknown_placement_policy_is_refused_with_the_choices() -> None:
    with pytest.raises(ConfigurationError) as refused:
        parse_configuration(
            {"multiKueue": {"capacityAwareDispatcherConfig": {"placementPolicy": "spread"}}}
        )
    assert str(refused.value) == (
        "multiKueue.capacityAwareDispatcherConfig.placementPolicy: unknown policy 'spread';"
        " use one of Spread, Pack, ConfigOrder"
    )


@pytest.mark.parametrize(
    "multikueue",
    [
        {"incrementalDispatcherConfig": {"stepSize": 0}},
        {"incrementalDispatcherConfig": {"roundTimeout": "0s"}},
        {"capacityAwareDispatcherConfig": {"nominationTimeout": "soon"}},
    ],
)
def test_a_step_below_one_or_a_bad_timeout_is_refused_with_its_path(
    multikueue: dict[str, object],
) -> None:
    with pytest.raises(ConfigurationError, match="multiKueue"):
        parse_configuration({"multiKueue": multikueue})
