"""The update's phases are true to the program: every component it declares has one, and a resource's phase is read
from its URN, the same for the fleet's progress lines, the benchmark's rows and the demo's timeline."""

from __future__ import annotations

import re

from components import REPO
from migration.phases import PHASES, phase_of

URN = "urn:pulumi:migrated::kf-istio-migrate::"


def test_every_component_the_program_declares_has_a_phase_and_each_named_phase_is_declared_by_that_name():
    types = {found for path in (REPO / "components").glob("*.py")
             for found in re.findall(r'f"\{PACKAGE\}:\w+:(\w+)"', path.read_text())}
    assert {key.split("::")[0] for key in PHASES} == types
    program = (REPO / "__main__.py").read_text()
    for component, name in (key.split("::") for key in PHASES if "::" in key):
        assert f'{component}("{name}"' in program, f"__main__.py declares no {component} named {name}"


def test_a_resource_belongs_to_the_phase_of_its_top_level_component():
    assert phase_of(URN + "kfistio:migration:Rollouts$command:local:Command::rollout-0") == "workloads"
    assert phase_of(URN + "kfistio:istio:Crds::istio-crds") == "CRDs"
    assert phase_of(URN + "pulumi:pulumi:Stack::kf-istio-migrate-migrated") is None
    assert phase_of(URN + "pulumi:providers:kubernetes::cluster") is None


def test_the_teardown_that_lifts_the_guard_is_its_own_phase():
    assert phase_of(URN + "kfistio:migration:Teardown::lift-guard") == "lift guard"
    assert phase_of(URN + "kfistio:migration:Teardown$command:local:Command::lift-guard") == "lift guard"
    assert phase_of(URN + "kfistio:migration:Teardown::teardown-migrated-control-plane") == "teardown"
