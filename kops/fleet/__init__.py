"""A fleet: several clusters of one inventory, selected by a limit, scheduled a few at a time (docs/design/fleet.md).

The fleet layer only selects, schedules and sums up; reading, planning and executing stay the one-cluster paths
of kops/cli, kops/planner and kops/executor, called once per cluster.
"""
