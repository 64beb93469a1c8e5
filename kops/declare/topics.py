"""One topic declaration: render its values for a cluster and check them against Kafka's rules.

A topic entry may repeat with `loop:` (Ansible semantics: once per item, `{{ item }}` in its values, the
loop variable renamed by `loop_control.loop_var`). `topic_defaults` of the play fill in what the entry does
not say (configs merged key by key).
"""

from __future__ import annotations

import re
from typing import Any

from kops.declare import fields
from kops.declare.problems import Problems
from kops.declare.templating import Renderer, TemplateProblem
from kops.declare.yamlsource import YamlList, YamlMap
from kops.model import topic_configs
from kops.model.desired import STRATEGIES, Placement, Secret, SourceLocation, TopicDeclaration

TOPIC_KEYS = (
    "name", "partitions", "replication_factor", "config", "config_unchecked", "placement", "state", "fanout",
    "loop", "loop_control",
)
PLACEMENT_KEYS = ("strategy", "assignments", "brokers", "exclude_brokers")
_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_NAME = 249


def check_topic_name(name: str, loc: SourceLocation, problems: Problems) -> bool:
    if name in ("", ".", ".."):
        problems.error(loc, f"illegal topic name {name!r}", "a topic name cannot be empty, '.' or '..'")
        return False
    if len(name) > MAX_NAME:
        problems.error(loc, f"topic name is {len(name)} characters long", f"Kafka allows at most {MAX_NAME}")
        return False
    if not _LEGAL_NAME.match(name):
        bad = sorted({c for c in name if not re.match(r"[a-zA-Z0-9._-]", c)})
        problems.error(loc, f"illegal character(s) {''.join(bad)!r} in topic name {name!r}",
                       "use only ASCII letters, digits, '.', '_' and '-'")
        return False
    return True


class TopicReader:
    """Renders and validates topic entries for one cluster."""

    def __init__(self, renderer: Renderer, variables: dict[str, Any], problems: Problems, allow_delete: bool) -> None:
        self.renderer = renderer
        self.variables = variables
        self.problems = problems
        self.allow_delete = allow_delete
        self._memo: dict[str, Any] = {}  # results for the cluster's own variables (not loop items)

    def _render(self, value: Any, loc: SourceLocation, variables: dict[str, Any]) -> tuple[bool, Any]:
        memo = self._memo if variables is self.variables else None
        try:
            return True, self.renderer.render_deep(value, variables, memo)
        except TemplateProblem as exc:
            self.problems.error(loc, exc.message, exc.hint)
            return False, None

    def read(self, entry: Any, loc: SourceLocation, defaults: dict[str, Any] | None) -> list[TopicDeclaration]:
        if not isinstance(entry, dict):
            self.problems.error(loc, "a topic must be a mapping with at least a name")
            return []
        where = entry.where if isinstance(entry, YamlMap) else (lambda _k: loc)
        key_where = (lambda k: entry.key_locations.get(k, loc)) if isinstance(entry, YamlMap) else (lambda _k: loc)
        fields.check_keys(entry, TOPIC_KEYS, "a topic", key_where, self.problems)
        if "loop" not in entry:
            declared = self._one(entry, loc, where, defaults, self.variables)
            return [declared] if declared else []
        ok, items = self._render(entry["loop"], where("loop"), self.variables)
        if not ok:
            return []
        if not isinstance(items, list):
            self.problems.error(where("loop"), f"loop must give a list, got {type(items).__name__}",
                                "write loop: [a, b] or loop: \"{{ a_list_variable }}\"")
            return []
        loop_var = "item"
        control = entry.get("loop_control")
        if isinstance(control, dict) and control.get("loop_var"):
            loop_var = str(control["loop_var"])
        result = []
        for index, item in enumerate(items):
            variables = dict(self.variables)
            variables[loop_var] = item
            variables["ansible_loop"] = {"index": index + 1, "index0": index, "first": index == 0,
                                         "last": index == len(items) - 1, "length": len(items)}
            declared = self._one(entry, loc, where, defaults, variables)
            if declared:
                result.append(declared)
        return result

    def _one(self, entry: dict[str, Any], loc: SourceLocation, where: Any, defaults: dict[str, Any] | None,
             variables: dict[str, Any]) -> TopicDeclaration | None:
        """One topic entry: merged over the play's topic_defaults, rendered, then each field checked."""
        values, locations = self._merged(entry, loc, where, defaults)
        rendered: dict[str, Any] = {}
        failed = False
        for key, value in values.items():
            ok, out = self._render(value, locations[key], variables)
            failed |= not ok
            rendered[key] = out
        if "name" not in rendered:
            self.problems.error(loc, "a topic needs a name")
            return None
        name = None if failed else self._name(rendered["name"], locations["name"])
        if name is None:
            return None
        state = self._state(rendered, locations, name)
        partitions, rf = self._sizes(rendered, locations)
        field_locations = dict(locations)
        self._removals: list[str] = []
        config = self._config(rendered.get("config"), values.get("config"), locations.get("config", loc), rf,
                              field_locations, checked=True)
        unchecked = self._config(rendered.get("config_unchecked"), values.get("config_unchecked"),
                                 locations.get("config_unchecked", loc), rf, field_locations, checked=False)
        placement = self._placement(rendered.get("placement"), locations.get("placement", loc), partitions, rf)
        if state == "present" and partitions is None and placement.assignments:
            partitions = len(placement.assignments)
        fanout = 1 if rendered.get("fanout") is None else fields.as_int(rendered["fanout"], "fanout",
                                                                         locations["fanout"], self.problems, minimum=0)
        return TopicDeclaration(
            name=name, location=locations["name"], state=state, partitions=partitions, replication_factor=rf,
            config=config, config_unchecked=unchecked, config_remove=tuple(sorted(set(self._removals))),
            placement=placement, field_locations=field_locations, fanout=1 if fanout is None else fanout,
        )

    @staticmethod
    def _merged(entry: dict[str, Any], loc: SourceLocation, where: Any,
                defaults: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, SourceLocation]]:
        """The entry over the defaults (configs merged key by key), with where each value was written."""
        values: dict[str, Any] = {}
        locations: dict[str, SourceLocation] = {}
        for key, value in (defaults or {}).items():
            values[key] = dict(value) if key in ("config", "config_unchecked") and isinstance(value, dict) else value
            locations[key] = defaults.where(key) if isinstance(defaults, YamlMap) else loc
        for key, value in entry.items():
            if key in ("loop", "loop_control"):
                continue
            if key in ("config", "config_unchecked") and isinstance(value, dict) and isinstance(values.get(key), dict):
                values[key] = _with_locations({**values[key], **value}, value, values.get(key))
            else:
                values[key] = value
            locations[key] = where(key)
        return values, locations

    def _name(self, value: Any, loc: SourceLocation) -> str | None:
        name = fields.as_str(value, "name", loc, self.problems)
        if name is None or not check_topic_name(name, loc, self.problems):
            return None
        if isinstance(name, Secret):
            self.problems.error(loc, "a topic name cannot come from lookup('env'): secrets are never planned")
            return None
        return name

    def _state(self, rendered: dict[str, Any], locations: dict[str, SourceLocation], name: str) -> str:
        if "state" not in rendered:
            return "present"
        state = fields.as_choice(rendered["state"], ("present", "absent"), "state", locations["state"],
                                 self.problems) or "present"
        if state == "absent" and not self.allow_delete:
            self.problems.error(locations["state"],
                                f"topic {name!r} is declared absent, but the play does not allow deletion",
                                "deleting a topic destroys its data: add allow_delete: true to the play to mean it")
        return state

    def _sizes(self, rendered: dict[str, Any], locations: dict[str, SourceLocation]) -> tuple[int | None, int | None]:
        """partitions and replication_factor: positive integers, RF within Kafka's limit."""
        partitions = rf = None
        if rendered.get("partitions") is not None:
            partitions = fields.as_int(rendered["partitions"], "partitions", locations["partitions"], self.problems,
                                       minimum=1)
        if rendered.get("replication_factor") is not None:
            rf = fields.as_int(rendered["replication_factor"], "replication_factor", locations["replication_factor"],
                               self.problems, minimum=1)
            if rf is not None and rf > 32767:
                self.problems.error(locations["replication_factor"],
                                    f"replication_factor {rf} is more than Kafka allows (32767)")
        return partitions, rf

    def _config(self, rendered: Any, raw: Any, loc: SourceLocation, rf: int | None,
                field_locations: dict[str, SourceLocation], checked: bool) -> dict[str, str]:
        p = self.problems
        if rendered is None:
            return {}
        label = "config" if checked else "config_unchecked"
        removals = self._removals
        if not isinstance(rendered, dict):
            p.error(loc, f"{label} must be a mapping of config names to values")
            return {}
        result: dict[str, str] = {}
        for key, value in rendered.items():
            key_loc = raw.where(key) if isinstance(raw, YamlMap) else loc
            field_locations[f"config.{key}"] = key_loc
            if isinstance(value,
                          (dict, list)) and not (checked and key == "cleanup.policy" and isinstance(value, list)):
                p.error(key_loc, f"config {key} must be a single value, not a {type(value).__name__}")
                continue
            if isinstance(value, Secret):
                p.error(key_loc, f"config {key} uses lookup('env'): secrets are never written into plans or configs")
                continue
            if value is None:
                removals.append(str(key))  # `key: null` declares the override's removal
                continue
            if not checked:
                result[str(key)] = str(value).lower() if isinstance(value, bool) else str(value)
                continue
            if key not in topic_configs.TOPIC_CONFIGS:
                guess = topic_configs.suggest(str(key))
                hint = f"did you mean {guess!r}? Configs kops does not know go under config_unchecked" if guess else \
                    "put configs kops does not know under config_unchecked"
                p.error(key_loc, f"unknown topic config {key!r}", hint)
                continue
            try:
                result[key] = topic_configs.normalize(key, value)
            except ValueError as exc:
                p.error(key_loc, str(exc))
        misr = result.get("min.insync.replicas")
        if checked and misr is not None and rf is not None and int(misr) > rf:
            p.error(field_locations.get("config.min.insync.replicas", loc),
                    f"min.insync.replicas {misr} is larger than replication_factor {rf}",
                    "producers with acks=all could never write; lower it or raise the replication factor")
        return result

    def _placement(self, rendered: Any, loc: SourceLocation, partitions: int | None, rf: int | None) -> Placement:
        p = self.problems
        if rendered is None:
            return Placement()
        if not isinstance(rendered, dict):
            p.error(loc, "placement must be a mapping (strategy, assignments, brokers, exclude_brokers)")
            return Placement()
        fields.check_keys(rendered, PLACEMENT_KEYS, "placement", lambda _k: loc, p)
        strategy = None
        if rendered.get("strategy") is not None:
            strategy = fields.as_choice(rendered["strategy"], STRATEGIES, "placement.strategy", loc, p)
        brokers = None
        if rendered.get("brokers") is not None:
            brokers = fields.as_int_list(rendered["brokers"], "placement.brokers", loc, p)
        exclude: tuple[int, ...] | list[int] = ()
        if rendered.get("exclude_brokers") is not None:
            exclude = fields.as_int_list(rendered["exclude_brokers"], "placement.exclude_brokers", loc, p) or ()
        if brokers and set(brokers) & set(exclude):
            p.error(loc, f"brokers {sorted(set(brokers) & set(exclude))} are both allowed and excluded")
        if brokers is not None and rf is not None and len(set(brokers)) < rf:
            p.error(loc, f"placement.brokers lists {len(set(brokers))} brokers, fewer than replication_factor {rf}")
        assignments = None
        if rendered.get("assignments") is not None:
            assignments = self._assignments(rendered["assignments"], loc, partitions, rf)
            if strategy not in (None, "static"):
                p.error(loc, f"assignments are only used by the static strategy, not {strategy}")
            strategy = "static"
        elif strategy == "static":
            p.error(loc, "the static strategy needs assignments (partition: [replicas])")
        return Placement(strategy, assignments, brokers, tuple(exclude))

    def _assignments(self, raw: Any, loc: SourceLocation, partitions: int | None,
                     rf: int | None) -> dict[int, tuple[int, ...]] | None:
        p = self.problems
        if isinstance(raw, list):
            raw = dict(enumerate(raw))
        if not isinstance(raw, dict):
            p.error(loc, "assignments must map partitions to replica lists, e.g. {0: [1, 2, 3]} or a list of lists")
            return None
        result: dict[int, tuple[int, ...]] = {}
        for key, replicas in raw.items():
            number = fields.as_int(key, "assignments partition", loc, p, minimum=0)
            ids = fields.as_int_list(replicas, f"assignments[{key}]", loc, p)
            if number is None or ids is None:
                return None
            if len(set(ids)) != len(ids):
                p.error(loc, f"assignments[{number}] lists a broker twice: {list(ids)}",
                        "a replica set has distinct brokers")
                return None
            if not ids:
                p.error(loc, f"assignments[{number}] is empty")
                return None
            if rf is not None and len(ids) != rf:
                p.error(loc, f"assignments[{number}] has {len(ids)} replicas, replication_factor is {rf}")
                return None
            result[number] = ids
        if sorted(result) != list(range(len(result))):
            p.error(loc, f"assignments must cover partitions 0..{len(result) - 1} without gaps")
            return None
        if partitions is not None and len(result) != partitions:
            p.error(loc, f"assignments cover {len(result)} partitions, partitions is {partitions}")
            return None
        sizes = {len(r) for r in result.values()}
        if len(sizes) > 1:
            p.error(loc, "every partition needs the same number of replicas in assignments")
            return None
        return result


def _with_locations(merged: dict[str, Any], override: Any, base: Any) -> Any:
    """A merged config mapping that still knows where each key came from."""
    if not isinstance(override, YamlMap) and not isinstance(base, YamlMap):
        return merged
    loc = override.location if isinstance(override, YamlMap) else base.location
    result = YamlMap(loc)
    for key, value in merged.items():
        result[key] = value
        source = override if key in override else base
        if isinstance(source, YamlMap):
            result.value_locations[key] = source.where(key)
            result.key_locations[key] = source.key_locations.get(key, loc)
    return result


def topic_list(value: Any, loc: SourceLocation, problems: Problems) -> list[tuple[Any, SourceLocation]]:
    """The entries of a play's `topics`, each with its location."""
    if value is None:
        return []
    if not isinstance(value, list):
        problems.error(loc, "topics must be a list of topic declarations")
        return []
    if isinstance(value, YamlList):
        return [(entry, value.where(i)) for i, entry in enumerate(value)]
    return [(entry, loc) for entry in value]
