"""Read by mypy in `make lint`, never run: both labs keep the contract (protolab.lab.api.RunningLab) as the
type checker sees them, member types included; a lab missing a member, or with one of another type, fails lint.
(test_lab_api checks the same at run time by name and parameters.)"""

from protolab.lab.api import LinkControl, NodeAccess, RunningLab
from protolab.lab.linkstate import LinkState
from protolab.lab.local import Lab
from protolab.lab.testbed import TestbedLab, TestbedLinks


def both_labs_keep_the_contract(one_machine: Lab, testbed: TestbedLab) -> tuple[RunningLab, RunningLab]:
    return one_machine, testbed


def a_running_lab_is_what_a_runner_sees(lab: RunningLab) -> NodeAccess:
    return lab


def both_link_states_keep_theirs(one_machine: LinkState, testbed: TestbedLinks) -> tuple[LinkControl, LinkControl]:
    return one_machine, testbed
