"""Discrete-event simulation of the engine on a virtual clock, fed by generator files.

``run_simulation(config)`` replays an upstream-format generator file (see ``generator``)
against the real engine and returns a ``SimulationSummary``; ``format_summary`` renders it.
Pure like the rest of the engine: no I/O beyond reading the config file, no wall clock.
"""

from core.engine.simulator.generator import GeneratorConfigError, load_config, load_scenario
from core.engine.simulator.manager_model import ManagerModel
from core.engine.simulator.simulation import Simulation, run_simulation
from core.engine.simulator.summary import SimulationSummary, format_summary

__all__ = [
    "GeneratorConfigError",
    "ManagerModel",
    "Simulation",
    "SimulationSummary",
    "format_summary",
    "load_config",
    "load_scenario",
    "run_simulation",
]
