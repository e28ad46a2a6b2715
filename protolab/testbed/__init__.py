"""The testbed hosts: the machines of an inventory a lab can be placed over (this machine, the controller, runs
protolab; a lab's nodes run on the testbed hosts).

- `placement`: the inventory read, which host each node runs on, and the split of a topology into parts.
- `reach`: how the controller reaches a host's shell and Docker engine (its namespace here, or SSH).
- `emulation`: testbed hosts emulated on one machine (a network namespace and a Docker engine each).
- `federation`: a Prometheus on each host, federated by the run's.
- `hosts`: the testbed hosts of one run.
"""
