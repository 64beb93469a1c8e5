"""One parser for every goal list: names, aliases, order kept, and one clear line for a bad list."""

from __future__ import annotations

import pytest

from kops.model.goals import DEFAULT_GOALS, GOAL_NAMES, goal_list


def test_a_comma_separated_string_and_a_list_read_the_same_in_order() -> None:
    assert goal_list("network_in, disk,leaders", "--goals") == ("network_in", "disk", "leaders")
    assert goal_list(["network_in", "disk", "leaders"], "x") == ("network_in", "disk", "leaders")


def test_bytes_is_the_disk_goal() -> None:
    assert goal_list("bytes", "--goal") == ("disk",)
    with pytest.raises(ValueError, match=r"goal 'disk' is named twice \(as 'bytes'\)"):
        goal_list("disk,bytes", "--goals")


@pytest.mark.parametrize(("value", "message"), [
    ("disk,cpu", r"--goals: unknown goal 'cpu': one of disk, network_in, .* \(bytes = disk\)"),
    ("", r"--goals: unknown goal ''"),
    ([], r"--goals: a goal list is one or more of disk"),
    (["disk", 3], r"--goals: a goal list is one or more of"),
    ("leaders,leaders", r"--goals: goal 'leaders' is named twice$"),
])
def test_a_bad_list_is_one_line_naming_where_what_and_the_valid_names(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        goal_list(value, "--goals")  # type: ignore[arg-type]  # bad input on purpose


def test_the_default_list_names_every_goal_once_resources_first() -> None:
    assert sorted(DEFAULT_GOALS) == sorted(GOAL_NAMES) and len(set(DEFAULT_GOALS)) == len(DEFAULT_GOALS)
    assert DEFAULT_GOALS[:3] == ("disk", "network_in", "network_out")
    assert DEFAULT_GOALS[-1] == "preferred_leaders"


def test_default_alone_is_the_default_list_and_is_no_goal_inside_a_list() -> None:
    assert goal_list("default", "--goals") == goal_list(["default"], "rebalance_goals") == DEFAULT_GOALS
    with pytest.raises(ValueError, match="unknown goal 'default'"):
        goal_list("disk,default", "--goals")
