"""Playbooks to DesiredState: templating, precedence, loops, coercion, every validation rule with its location."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kops.declare.loader import load_declarations
from kops.model.desired import Secret
from tests.examples import examples

INVENTORY = """
all:
  vars: {rf: 1, where: all}
  children:
    nonprod:
      vars: {rf: 2, where: group}
      hosts:
        dev: {zookeeper: "zk-dev:2181/kafka"}
        staging: {zookeeper: "zk-stg:2181/kafka", where: host}
    prod:
      vars: {rf: 3}
      hosts:
        prod: {zookeeper: "zk-prod:2181/kafka"}
"""


def write(tmp_path: Path, playbook: str, inventory: str = INVENTORY) -> tuple[Path, Path]:
    pb = tmp_path / "play.yml"
    pb.write_text(textwrap.dedent(playbook).lstrip("\n"))
    inv = tmp_path / "inv.yml"
    inv.write_text(inventory)
    return pb, inv


def load(tmp_path: Path, playbook: str, **kwargs):
    pb, inv = write(tmp_path, playbook)
    return load_declarations(pb, kwargs.pop("inventory", inv), **kwargs)


def messages(decl) -> list[str]:
    return [str(p) for p in decl.problems.sorted()]


def test_templated_topics_per_environment(tmp_path: Path) -> None:
    decl = load(tmp_path, """
        - name: platform
          hosts: all
          vars: {base: 6}
          topics:
            - name: "events.{{ inventory_hostname }}"
              partitions: "{{ base * 2 }}"
              replication_factor: "{{ rf }}"
              config: {retention.ms: "{{ 3600 * 1000 }}", cleanup.policy: compact}
    """)
    assert decl.ok, messages(decl)
    assert sorted(decl.desired) == ["dev", "prod", "staging"]
    prod = decl.desired["prod"].topics["events.prod"]
    assert (prod.partitions, prod.replication_factor) == (12, 3)
    assert prod.config == {"retention.ms": "3600000", "cleanup.policy": "compact"}
    assert decl.desired["dev"].topics["events.dev"].replication_factor == 2
    assert decl.desired["prod"].connect == "zk-prod:2181/kafka"
    assert str(prod.location) == f"{tmp_path / 'play.yml'}:5:13"
    assert prod.where("partitions").line == 6 and prod.where("config.cleanup.policy").line == 8


def test_precedence_inventory_play_vars_files_extra(tmp_path: Path) -> None:
    (tmp_path / "more.yml").write_text("from_file: file\nboth: file\n")
    playbook = """
        - hosts: staging
          vars: {both: play, play_only: play, where_seen: "{{ where }}"}
          vars_files: [more.yml]
          topics:
            - name: "t-{{ both }}-{{ play_only }}-{{ from_file }}-{{ where_seen }}-{{ extra | default('none') }}"
    """
    decl = load(tmp_path, playbook)
    assert list(decl.desired["staging"].topics) == ["t-file-play-file-host-none"]
    decl = load(tmp_path, playbook, extra_vars=["both=cli extra=x"])
    assert list(decl.desired["staging"].topics) == ["t-cli-play-file-host-x"]


def test_variables_refer_to_variables(tmp_path: Path) -> None:
    decl = load(tmp_path, """
        - hosts: dev
          vars: {c: "{{ b }}-c", b: "{{ a }}-b", a: "{{ inventory_hostname }}"}
          topics: [{name: "{{ c }}"}]
    """)
    assert list(decl.desired["dev"].topics) == ["dev-b-c"]
    decl = load(tmp_path, """
        - hosts: dev
          vars: {x: "{{ y }}", y: "{{ x }}"}
          topics: [{name: "{{ x }}"}]
    """)
    assert any("refers to itself" in m for m in messages(decl))


def test_loops_and_loop_var(tmp_path: Path) -> None:
    decl = load(tmp_path, """
        - hosts: dev
          vars:
            services: [a, b, c]
          topics:
            - name: "svc.{{ item }}"
              partitions: 3
              loop: "{{ services }}"
            - name: "{{ t.name }}"
              partitions: "{{ t.p }}"
              loop: [{name: x, p: 1}, {name: y, p: "2"}]
              loop_control: {loop_var: t}
    """)
    assert decl.ok, messages(decl)
    topics = decl.desired["dev"].topics
    assert sorted(topics) == ["svc.a", "svc.b", "svc.c", "x", "y"]
    assert topics["y"].partitions == 2
    bad = load(tmp_path, """
        - hosts: dev
          topics: [{name: "{{ item }}", loop: "{{ 'not-a-list' }}"}]
    """)
    assert any("loop must give a list" in m for m in messages(bad))


def test_topic_defaults_merge(tmp_path: Path) -> None:
    decl = load(tmp_path, """
        - hosts: dev
          topic_defaults:
            partitions: 6
            replication_factor: 2
            config: {retention.ms: 1000, cleanup.policy: delete}
          topics:
            - name: a
            - name: b
              partitions: 1
              config: {cleanup.policy: compact}
    """)
    a, b = decl.desired["dev"].topics["a"], decl.desired["dev"].topics["b"]
    assert (a.partitions, a.config) == (6, {"retention.ms": "1000", "cleanup.policy": "delete"})
    assert (b.partitions, b.config) == (1, {"retention.ms": "1000", "cleanup.policy": "compact"})


@pytest.mark.parametrize(
    "topic, expected",
    [
        ("{name: 'a b'}", "3:14: illegal character(s) ' ' in topic name 'a b'"),
        ("{name: '..'}", "illegal topic name '..'"),
        ("{name: " + "x" * 250 + "}", "topic name is 250 characters long"),
        ("{name: t, partitions: 0}", "partitions must be at least 1, got 0"),
        ("{name: t, partitions: many}", "partitions must be an integer, got 'many'"),
        ("{name: t, replication_factor: true}", "replication_factor must be an integer"),
        ("{name: t, config: {retention.ms: soon}}", "retention.ms must be an integer, got 'soon'"),
        ("{name: t, config: {retention.ms: -5}}", "retention.ms must be at least -1, got -5"),
        ("{name: t, config: {cleanup.policy: shred}}", "cleanup.policy must be a list of delete, compact"),
        ("{name: t, config: {compression.type: brotli}}", "compression.type must be one of"),
        ("{name: t, config: {min.cleanable.dirty.ratio: 2}}", "must be between 0 and 1"),
        ("{name: t, config: {unclean.leader.election.enable: maybe}}", "must be true or false"),
        ("{name: t, config: {retentoin.ms: 1}}", "unknown topic config 'retentoin.ms' (did you mean 'retention.ms'?"),
        ("{name: t, replication_factor: 2, config: {min.insync.replicas: 3}}",
         "min.insync.replicas 3 is larger than replication_factor 2"),
        ("{name: t, config: {segment.bytes: 10}}", "segment.bytes must be at least 14"),
        ("{name: t, state: gone}", "state must be one of present, absent"),
        ("{name: t, state: absent}", "does not allow deletion"),
        ("{name: t, partitons: 3}", "unknown key 'partitons' in a topic (did you mean 'partitions'?)"),
        ("{partitions: 3}", "a topic needs a name"),
        ("{name: t, placement: {strategy: random}}", "placement.strategy must be one of rack-aware, balanced, static"),
        ("{name: t, placement: {strategy: static}}", "the static strategy needs assignments"),
        ("{name: t, replication_factor: 2, placement: {assignments: [[1, 1]]}}", "lists a broker twice"),
        ("{name: t, replication_factor: 2, placement: {assignments: [[1, 2], [3]]}}",
         "has 1 replicas, replication_factor is 2"),
        ("{name: t, partitions: 3, placement: {assignments: [[1], [2]]}}", "cover 2 partitions, partitions is 3"),
        ("{name: t, placement: {assignments: {0: [1], 2: [2]}}}", "without gaps"),
        ("{name: t, replication_factor: 3, placement: {brokers: [1, 2]}}", "fewer than replication_factor 3"),
        ("{name: t, placement: {brokers: [1, 2], exclude_brokers: [2]}}", "both allowed and excluded"),
        ("{name: '{{ nope }}'}", "undefined variable: 'nope' is undefined"),
    ],
)
def test_validation_rules(tmp_path: Path, topic: str, expected: str) -> None:
    decl = load(tmp_path, f"""
        - hosts: dev
          topics:
            - {topic}
    """)
    assert not decl.ok
    found = messages(decl)
    assert any(expected in m for m in found), found
    assert all(m.startswith(str(tmp_path / "play.yml") + ":") for m in found)


def test_null_declares_an_override_removal(tmp_path: Path) -> None:
    decl = load(tmp_path, "- hosts: dev\n  topics: [{name: t, config: {retention.ms: null, segment.ms: 1000}}]\n")
    t = decl.desired["dev"].topics["t"]
    assert t.config == {"segment.ms": "1000"} and t.config_remove == ("retention.ms",)


def test_config_unchecked_and_coercions(tmp_path: Path) -> None:
    decl = load(tmp_path, """
        - hosts: dev
          topics:
            - name: t
              partitions: "3"
              replication_factor: 2.0
              config: {preallocate: yes, cleanup.policy: [compact, delete], min.cleanable.dirty.ratio: 0.2}
              config_unchecked: {confluent.placement: "x", custom.flag: true}
    """)
    assert decl.ok, messages(decl)
    t = decl.desired["dev"].topics["t"]
    assert (t.partitions, t.replication_factor) == (3, 2)
    assert t.config == {"preallocate": "true", "cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": "0.2"}
    assert t.config_unchecked == {"confluent.placement": "x", "custom.flag": "true"}


def test_play_level_rules(tmp_path: Path) -> None:
    decl = load(tmp_path, """
        - name: first
          hosts: dev
          hostz: x
          topics: [{name: a}]
          brokers: {decommission: [1], add: [1]}
          rebalance: {goal: entropy}
          execution: {throttle: 10MiB/s, batch: {max_partitions: 0}, order: random, stall_timeout: soon}
        - name: second
          hosts: nonprod
          topics: [{name: a}]
        - name: third
        - hosts: ghosts
          topics: "nope"
    """)
    found = messages(decl)
    expected = [
        "3:3: unknown key 'hostz' in a play",
        "brokers [1] are both decommissioned and added",
        "rebalance.goal must be one of replicas, leaders, bytes",
        "max_partitions must be at least 1",
        "execution.order must be one of size, topic, as-declared",
        "execution.stall_timeout",
        "10:19: topic 'a' is declared twice for cluster dev (first declared at",
        "third: hosts is required",
        "host pattern 'ghosts' matches no host or group",
        "topics must be a list of topic declarations",
    ]
    for text in expected:
        assert any(text in m for m in found), (text, found)


def test_allow_delete_and_broker_sections(tmp_path: Path) -> None:
    decl = load(tmp_path, """
        - hosts: prod
          allow_delete: true
          topics: [{name: old, state: absent}]
          brokers: {decommission: "4, 5", add: [7]}
          rebalance: {goal: leaders, tolerance: 0%}
          execution: {throttle: 50MiB/s, batch: {max_bytes: 1GiB, max_moves_per_broker: "3"}, stall_timeout: 2m}
    """)
    assert decl.ok, messages(decl)
    assert decl.desired["prod"].execution.stall_timeout == 120.0
    d = decl.desired["prod"]
    assert d.allow_delete and d.topics["old"].state == "absent"
    assert d.brokers.decommission == (4, 5) and d.brokers.add == (7,)
    assert (d.rebalance.goal, d.rebalance.tolerance) == ("leaders", 0.0)
    assert (d.execution.throttle, d.execution.max_bytes, d.execution.max_moves_per_broker) == (50 * 2**20, 2**30, 3)


@pytest.mark.parametrize(
    "expression",
    [
        "{{ ''.__class__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ lookup.__globals__ }}",
        "{{ self.__init__.__globals__ }}",
        "{{ cycler.__init__.__globals__.os }}",
        "{% for c in [].__class__.__base__.__subclasses__() %}{{ c }}{% endfor %}",
        "{{ (1).__class__.__bases__ }}",
    ],
)
def test_sandbox_refuses_python_internals(tmp_path: Path, expression: str) -> None:
    decl = load(tmp_path, f"""
        - hosts: dev
          topics: [{{name: "{expression}"}}]
    """)
    assert not decl.ok
    assert all("Traceback" not in m for m in messages(decl))
    assert any("sandbox" in m or "undefined" in m or "template" in m for m in messages(decl)), messages(decl)


def test_env_lookup_is_secret_and_never_in_config(tmp_path: Path) -> None:
    pb, inv = write(tmp_path, """
        - hosts: dev
          vars: {zk_password: "{{ lookup('env', 'ZK_PASS') }}", dsn: "kafka:{{ zk_password }}@zk"}
          topics:
            - name: t
              config: {retention.ms: "{{ lookup('env', 'ZK_PASS') }}"}
    """)
    decl = load_declarations(pb, inv, environ={"ZK_PASS": "hunter2"})
    assert isinstance(decl.desired["dev"].host_vars["zk_password"], Secret)
    assert isinstance(decl.desired["dev"].host_vars["dsn"], Secret)  # a secret stays secret when interpolated
    assert repr(decl.desired["dev"].host_vars["dsn"]) == "'***'"
    found = messages(decl)
    assert any("uses lookup('env'): secrets are never written" in m for m in found)
    assert all("hunter2" not in m for m in found)
    missing = load_declarations(pb, inv, environ={})
    assert any("environment variable ZK_PASS is not set" in m for m in messages(missing))


def test_file_lookup_and_filters(tmp_path: Path) -> None:
    (tmp_path / "connect.txt").write_text("zk-from-file:2181/kafka\n")
    decl = load(tmp_path, """
        - hosts: dev
          vars:
            names: [A, B]
          topics:
            - name: "{{ lookup('file', 'connect.txt') | regex_replace('[^a-z]', '') }}"
            - name: "{{ names | join('-') | lower }}"
              partitions: "{{ '3' | int }}"
              config: {segment.bytes: "{{ '256MiB' | size }}", max.message.bytes: "{{ '1MB' | size }}"}
    """)
    assert decl.ok, messages(decl)
    topics = decl.desired["dev"].topics
    assert "zkfromfilekafka" in topics and topics["a-b"].config["segment.bytes"] == str(256 * 2**20)


def test_name_collision_warning(tmp_path: Path) -> None:
    decl = load(tmp_path, """
        - hosts: dev
          topics: [{name: a.b}, {name: a_b}]
    """)
    assert decl.ok and any("collides with" in str(w) for w in decl.problems.warnings)


def test_without_inventory_the_cluster_is_default(tmp_path: Path) -> None:
    pb, _ = write(tmp_path, """
        - hosts: all
          topics: [{name: t, partitions: 1}]
    """)
    decl = load_declarations(pb, None, zookeeper="127.0.0.1:2181/x")
    assert list(decl.desired) == ["default"] and decl.desired["default"].connect == "127.0.0.1:2181/x"


def test_limit(tmp_path: Path) -> None:
    decl = load(tmp_path, "- hosts: all\n  topics: [{name: t}]\n", limit="nonprod:!staging")
    assert list(decl.desired) == ["dev"]
    decl = load(tmp_path, "- hosts: all\n  topics: [{name: t}]\n", limit="nothing")
    assert any("matches no host" in m for m in messages(decl))


def test_bad_zookeeper_connect_is_reported(tmp_path: Path) -> None:
    pb, inv = write(tmp_path, "- hosts: all\n  topics: []\n", "all:\n  hosts:\n    c: {zookeeper: 'bad host'}\n")
    decl = load_declarations(pb, inv)
    assert any("host c: zookeeper: invalid ZooKeeper host" in m for m in messages(decl))


def test_extra_vars_forms(tmp_path: Path) -> None:
    (tmp_path / "extra.yml").write_text("n: 7\n")
    playbook = "- hosts: dev\n  topics: [{name: t, partitions: '{{ n }}'}]\n"
    for extra in (["n=7"], [f"@{tmp_path / 'extra.yml'}"], ['{"n": 7}']):
        decl = load(tmp_path, playbook, extra_vars=extra)
        assert decl.desired["dev"].topics["t"].partitions == 7, extra
    decl = load(tmp_path, playbook, extra_vars=["novalue"])
    assert any("is not key=value" in m for m in messages(decl))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("- hosts: dev\n  topics:\n    - name: a\n    name: b\n", "invalid YAML"),
        ("hosts: dev\n", "a playbook must be a list of plays"),
        ("- hosts: dev\n  hosts: prod\n", "duplicate key 'hosts' (first at line 1)"),
        ("- &a [*a]\n", "recursive YAML alias"),
        ("- !!python/object:os.system {}\n", "unsupported YAML tag"),
        ("- !!python/name:os.system ''\n", "invalid YAML"),
        ("- " + "[" * 300 + "]" * 300 + "\n", "nest"),
    ],
)
def test_yaml_errors(tmp_path: Path, text: str, expected: str) -> None:
    pb = tmp_path / "play.yml"
    pb.write_text(text)
    decl = load_declarations(pb, None)
    assert any(expected in m for m in messages(decl)), messages(decl)


def fresh(path: Path) -> Path:
    """`path` gone, so the example writes a new file: ext4 flushes a file rewritten in place when it is closed
    (auto_da_alloc), 3 ms a file and example."""
    path.unlink(missing_ok=True)
    return path


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_never_traceback(tmp_path: Path, data: bytes) -> None:
    pb = fresh(tmp_path / "fuzz.yml")
    pb.write_bytes(data)
    inv = fresh(tmp_path / "fuzz-inv.yml")
    inv.write_bytes(data)
    load_declarations(pb, None)
    load_declarations(pb, inv)


yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5000) | st.text(max_size=12)
    | st.sampled_from(["{{ x }}", "{{ item }}", "{{ 1/0 }}", "{% for %}", "{{ ''.__class__ }}", "all", "dev", "3"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["name", "hosts", "topics", "partitions", "replication_factor", "config", "placement",
                         "loop", "vars", "state", "brokers", "execution", "rebalance", "assignments", "strategy",
                         "retention.ms", "batch", "throttle", "allow_delete", "topic_defaults", "vars_files"]),
        children, max_size=6),
    max_leaves=25,
)


@settings(max_examples=examples(200), suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(yaml_values)
def test_random_yaml_documents_never_traceback(tmp_path: Path, document) -> None:
    import yaml

    pb = fresh(tmp_path / "fuzz.yml")
    pb.write_text(yaml.safe_dump(document))
    inv = fresh(tmp_path / "inv.yml")
    inv.write_text(INVENTORY)
    load_declarations(pb, inv)
    load_declarations(pb, pb)  # the same document as an inventory


def test_rebalance_goals_are_read_by_the_one_goal_list_parser(tmp_path: Path) -> None:
    decl = load(tmp_path, """
        - hosts: prod
          rebalance: {goals: [bytes, network_in, replicas], tolerance: 0}
        - hosts: dev
          rebalance: {goals: "disk, leaders"}
    """)
    assert decl.ok, messages(decl)
    prod, dev = decl.desired["prod"].rebalance, decl.desired["dev"].rebalance
    assert (prod.goals, prod.tolerance) == (("disk", "network_in", "replicas"), 0.0)
    assert (dev.goals, dev.tolerance) == (("disk", "leaders"), 0.1)


@pytest.mark.parametrize(("section", "expected"), [
    ("{goals: [disk, cpu]}", "rebalance.goals: unknown goal 'cpu': one of disk, network_in"),
    ("{goals: [disk, bytes]}", "rebalance.goals: goal 'disk' is named twice (as 'bytes')"),
    ("{goals: []}", "rebalance.goals: a goal list is one or more of"),
    ("{goal: replicas, goals: [replicas]}", "rebalance: goal and goals together"),
])
def test_a_bad_goal_list_is_one_problem_at_its_play(tmp_path: Path, section: str, expected: str) -> None:
    decl = load(tmp_path, f"""
        - hosts: prod
          rebalance: {section}
    """)
    found = messages(decl)
    assert len(found) == 1 and expected in found[0] and found[0].startswith(str(tmp_path / "play.yml")), found
