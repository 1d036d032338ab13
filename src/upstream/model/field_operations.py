"""Field operations: how a program made each field of a destination (design §3.5, seed 000).

A program lists the operations it applied, in order. An input is a `Source` (a dataset), a
field name (the output of the latest earlier operation with that name) or `op.output(name)`
(that operation's output, when an earlier one is not meant). Names are labels, not keys: an
operation's identity is its position in the list. An operation with inputs and no outputs is a
drop. A transform's outputs depend on all its inputs.

Everything here is pure: the recorder, the ingestion of the `upstream_fieldOperations` facet,
the seed's JSON document and the field-lineage queries all resolve operations with `resolve`,
so one set of rules validates them and one derivation turns them into field lineage.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from upstream.model.errors import InvalidInput, Problem


@dataclass(frozen=True)
class Source:
    """A dataset an operation reads (seed's `Source`)."""

    namespace: str
    name: str
    description: str | None = None


@dataclass(frozen=True)
class Destination:
    """The dataset the operations write. `fields` overrides the fields still alive after the
    last operation; `temporary` marks it temporary to the run's workflow run (design §3.4)."""

    namespace: str
    name: str
    description: str | None = None
    fields: Sequence[str] | None = None
    temporary: bool = False


@dataclass(frozen=True, eq=False)
class FieldOutput:
    """`op.output(name)`: the field `name` as output by one specific operation."""

    operation: FieldOperation
    name: str


#: What an operation may take as input.
FieldInput = Source | str | FieldOutput


class FieldOperation:
    """One step of a program, e.g. `FieldOperation("parse", "…", inputs=["body"],
    outputs=["firstName", "lastName"])`. Compared by identity: two `drop`s are two steps."""

    def __init__(
        self,
        name: str,
        description: str = "",
        *,
        inputs: Iterable[FieldInput] = (),
        outputs: Iterable[str] = (),
    ) -> None:
        self.name = name
        self.description = description
        self.inputs: tuple[FieldInput, ...] = tuple(inputs)
        self.outputs: tuple[str, ...] = tuple(dict.fromkeys(outputs))

    def output(self, name: str) -> FieldOutput:
        """This operation's output `name`, to reference it unambiguously from a later one."""
        if name not in self.outputs:
            raise ValueError(f"operation {self.name!r} has no output {name!r}")
        return FieldOutput(self, name)

    @staticmethod
    def builder() -> FieldOperationBuilder:
        """The seed's fluent form: `FieldOperation.builder().set_name("read")…build()`."""
        return FieldOperationBuilder()

    def __repr__(self) -> str:
        return f"FieldOperation({self.name!r}, inputs={self.inputs!r}, outputs={self.outputs!r})"


@dataclass
class FieldOperationBuilder:
    """Mirrors the seed's `FieldOperation.Builder`."""

    _name: str = ""
    _description: str = ""
    _inputs: list[FieldInput] = field(default_factory=list)
    _outputs: list[str] = field(default_factory=list)

    def set_name(self, name: str) -> FieldOperationBuilder:
        self._name = name
        return self

    def set_description(self, description: str) -> FieldOperationBuilder:
        self._description = description
        return self

    def add_input_source(self, source: Source) -> FieldOperationBuilder:
        self._inputs.append(source)
        return self

    def add_input_field(self, field_input: str | FieldOutput) -> FieldOperationBuilder:
        self._inputs.append(field_input)
        return self

    def add_output(self, name: str) -> FieldOperationBuilder:
        self._outputs.append(name)
        return self

    def build(self) -> FieldOperation:
        return FieldOperation(
            self._name, self._description, inputs=self._inputs, outputs=self._outputs
        )


# -- resolved operations ---------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class SourceRef:
    """A source input, resolved."""

    namespace: str
    name: str
    description: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class FieldRef:
    """A field input, resolved to the position of the operation that output it."""

    name: str
    origin: int


@dataclass(frozen=True)
class Step:
    """An operation at its position in the recorded list, with its inputs resolved."""

    index: int
    name: str
    description: str
    inputs: tuple[SourceRef | FieldRef, ...]
    outputs: tuple[str, ...]

    @property
    def is_drop(self) -> bool:
        return not self.outputs

    @property
    def sources(self) -> tuple[SourceRef, ...]:
        return tuple(i for i in self.inputs if isinstance(i, SourceRef))

    @property
    def field_inputs(self) -> tuple[FieldRef, ...]:
        return tuple(i for i in self.inputs if isinstance(i, FieldRef))


#: A field of a source dataset: (source, field name).
SourceField = tuple[SourceRef, str]


@dataclass(frozen=True)
class FieldOrigin:
    """One source field a destination field was made from, and how."""

    source: SourceRef
    field: str
    subtype: Literal["IDENTITY", "TRANSFORMATION"]


class OperationSet:
    """A validated, resolved list of operations: the unit stored once per checksum."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps: tuple[Step, ...] = tuple(steps)

    @cached_property
    def _alive(self) -> tuple[dict[str, int], dict[str, Step]]:
        alive: dict[str, int] = {}
        dropped: dict[str, Step] = {}
        for step in self.steps:
            for name in step.outputs:
                alive[name] = step.index
                dropped.pop(name, None)
            if step.is_drop:
                for ref in step.field_inputs:
                    if alive.get(ref.name) == ref.origin:
                        del alive[ref.name]
                        dropped[ref.name] = step
        return alive, dropped

    @property
    def alive(self) -> dict[str, int]:
        """Fields output and not dropped after the last operation -> the operation that made
        them, in the order they were first made."""
        return self._alive[0]

    def dropped_by(self, name: str) -> Step | None:
        """The drop that removed `name`, when it is not alive at the end."""
        return self._alive[1].get(name)

    @cached_property
    def sources(self) -> tuple[SourceRef, ...]:
        """Every dataset read, in order of first reading."""
        return tuple(dict.fromkeys(s for step in self.steps for s in step.sources))

    @cached_property
    def _dependencies(self) -> tuple[list[int], list[dict[str, frozenset[SourceField]]]]:
        """Per step, a bit mask of the steps its outputs depend on (itself included) and, per
        output, the source fields it was made from. One forward pass: inputs always point to
        earlier steps, so each step is computed once from its inputs' results — memoised, where
        a walk per field would be exponential in the number of all-to-all steps."""
        masks: list[int] = []
        origins: list[dict[str, frozenset[SourceField]]] = []
        for step in self.steps:
            mask = 1 << step.index
            inherited: set[SourceField] = set()
            for ref in step.field_inputs:
                mask |= masks[ref.origin]
                inherited |= origins[ref.origin][ref.name]
            frozen = frozenset(inherited)
            per_output: dict[str, frozenset[SourceField]] = {}
            for name in step.outputs:
                direct = {(source, name) for source in step.sources}
                per_output[name] = frozen | direct if direct else frozen
            masks.append(mask)
            origins.append(per_output)
        return masks, origins

    def producer(self, name: str) -> Step | None:
        """The operation that made the destination field `name`, when it is alive."""
        index = self.alive.get(name)
        return None if index is None else self.steps[index]

    def trim_to_field(self, name: str) -> list[Step]:
        """The operations field `name` depends on, in dependency (recorded) order; empty when
        the field is not alive (design §4.3)."""
        producer = self.producer(name)
        if producer is None:
            return []
        mask = self._dependencies[0][producer.index]
        return [s for s in self.steps if mask >> s.index & 1]

    def trim_from_source(self, source: SourceRef, name: str) -> list[Step]:
        """The operations source field `name` of `source` flows through, in recorded order:
        those reading `source` with an output `name`, then every one taking a field they
        made, directly or not (drops included: that is where a field ends)."""
        reached: set[tuple[int, str]] = set()
        steps: list[Step] = []
        for step in self.steps:
            reads = source in step.sources and name in step.outputs
            takes = any((ref.origin, ref.name) in reached for ref in step.field_inputs)
            if takes:
                reached.update((step.index, output) for output in step.outputs)
            elif reads:
                reached.add((step.index, name))
            if reads or takes:
                steps.append(step)
        return steps

    def origins_of(self, name: str) -> list[FieldOrigin]:
        """The source fields destination field `name` was made from: IDENTITY when the
        operation that made it read the source directly, else TRANSFORMATION."""
        producer = self.producer(name)
        if producer is None:
            return []
        subtype: Literal["IDENTITY", "TRANSFORMATION"] = (
            "IDENTITY" if not producer.field_inputs else "TRANSFORMATION"
        )
        found = self._dependencies[1][producer.index][name]
        ordered = sorted(found, key=lambda pair: (pair[0].namespace, pair[0].name, pair[1]))
        return [FieldOrigin(source, f, subtype) for source, f in ordered]

    def field_lineage(
        self, fields: Sequence[str] | None = None
    ) -> tuple[dict[str, list[FieldOrigin]], list[SourceRef]]:
        """Per destination field (the given ones, else the alive ones), its source fields;
        and the sources no destination field comes from (still read to make the
        destination, so upstream of it as a whole)."""
        names = list(fields) if fields is not None else list(self.alive)
        lineage = {name: origins for name in names if (origins := self.origins_of(name))}
        reached = {o.source for origins in lineage.values() for o in origins}
        return lineage, [s for s in self.sources if s not in reached]

    def to_json(self) -> list[dict[str, Any]]:
        """The stored form: field inputs carry the position of the operation that made them."""
        return [step_json(step) for step in self.steps]

    @cached_property
    def checksum(self) -> str:
        """Identical operation lists from many runs are stored once (design §2)."""
        canonical = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def step_json(step: Step, origins: Mapping[int, int] | None = None) -> dict[str, Any]:
    """One operation as JSON; `origins` renumbers field origins for a trimmed path (null
    for an operation outside it)."""
    inputs: list[dict[str, Any]] = []
    for item in step.inputs:
        if isinstance(item, SourceRef):
            inputs.append({"type": "source", "namespace": item.namespace, "name": item.name})
        else:
            origin = origins.get(item.origin) if origins is not None else item.origin
            inputs.append({"type": "field", "name": item.name, "origin": origin})
    return {
        "name": step.name,
        "description": step.description,
        "inputs": inputs,
        "outputs": list(step.outputs),
    }


# -- validation and resolution --------------------------------------------------------------


def resolve(operations: Sequence[FieldOperation]) -> OperationSet:
    """Validate `operations` and resolve their field references (design §3.5).

    Raises InvalidInput (a ValueError) located at `operations[i]` and naming the operation:
    no operation reads a Source, a field input no earlier operation output, an empty name,
    an operation without inputs.
    """
    problems: list[Problem] = []
    steps: list[Step] = []
    latest: dict[str, int] = {}
    positions: dict[int, int] = {}
    if not operations:
        raise InvalidInput.at("operations", "at least one operation is required")
    for index, op in enumerate(operations):
        where = f"operations[{index}]"
        label = f"operation {op.name!r}" if _named(op.name) else "an operation"
        step_problems: list[str] = []
        if not _named(op.name):
            step_problems.append("the operation name must not be empty")
        if not op.inputs:
            step_problems.append(
                f"{label} has no inputs: it must read a source or a field (a drop names "
                "the fields it drops)"
            )
        inputs: list[SourceRef | FieldRef] = []
        for item in op.inputs:
            resolved = _resolve_input(item, label, latest, positions)
            if isinstance(resolved, str):
                step_problems.append(resolved)
            elif resolved not in inputs:
                inputs.append(resolved)
        step_problems.extend(
            f"{label} has an output with an empty name" for name in op.outputs if not _named(name)
        )
        problems.extend(Problem(where, message) for message in step_problems)
        steps.append(Step(index, op.name, op.description or "", tuple(inputs), op.outputs))
        for name in op.outputs:
            latest[name] = index
        positions[id(op)] = index
    if not any(step.sources for step in steps):
        problems.append(
            Problem("operations", "no operation reads a Source: at least one must read a dataset")
        )
    if problems:
        raise InvalidInput(problems)
    return OperationSet(steps)


def _named(name: object) -> bool:
    return isinstance(name, str) and bool(name.strip())


def _resolve_input(
    item: object, label: str, latest: Mapping[str, int], positions: Mapping[int, int]
) -> SourceRef | FieldRef | str:
    """The resolved input, or the problem with it."""
    if isinstance(item, Source):
        if not (_named(item.namespace) and _named(item.name)):
            return f"{label} reads a Source with an empty namespace or name"
        return SourceRef(item.namespace, item.name, item.description)
    if isinstance(item, FieldOutput):
        origin = positions.get(id(item.operation))
        if item.name not in item.operation.outputs:
            return (
                f"{label} takes {item.name!r} from operation {item.operation.name!r}, "
                "which has no such output"
            )
        if origin is None:
            return (
                f"{label} takes {item.name!r} from operation {item.operation.name!r}, "
                "which is not an earlier operation of this list"
            )
        return FieldRef(item.name, origin)
    if isinstance(item, str):
        if not _named(item):
            return f"{label} has a field input with an empty name"
        if item not in latest:
            return f"{label} takes field {item!r}, which no earlier operation outputs"
        return FieldRef(item, latest[item])
    return f"{label} has an input of type {type(item).__name__}; use a Source or a field name"


# -- the JSON forms ---------------------------------------------------------------------------


def operations_from_json(
    raw: object, *, sources: Mapping[str, Source] | None = None
) -> list[FieldOperation]:
    """Operations from JSON (the `upstream_fieldOperations` facet or the seed's document).

    An input is `{"type": "source", "namespace", "name"}`, `{"type": "field", "name",
    "origin"?}` (origin: the position of the operation that output it) or a string: a key of
    `sources` (the seed's `"source"`, or a source's name) or else a field name. Shape problems
    raise InvalidInput located at `operations[i]…`; `resolve` checks the rest.
    """
    if not isinstance(raw, list):
        raise InvalidInput.at("operations", "must be an array of operations")
    problems: list[Problem] = []
    operations: list[FieldOperation] = []
    for index, item in enumerate(raw):
        where = f"operations[{index}]"
        if not isinstance(item, dict):
            problems.append(Problem(where, "an operation must be an object"))
            operations.append(FieldOperation(""))
            continue
        name, description = item.get("name"), item.get("description") or ""
        if not isinstance(name, str):
            problems.append(Problem(f"{where}.name", "must be a string"))
            name = ""
        if not isinstance(description, str):
            problems.append(Problem(f"{where}.description", "must be a string"))
            description = ""
        inputs: list[FieldInput] = []
        raw_inputs = item.get("inputs") or []
        if not isinstance(raw_inputs, list):
            problems.append(Problem(f"{where}.inputs", "must be an array"))
            raw_inputs = []
        for position, value in enumerate(raw_inputs):
            parsed = _input_from_json(value, operations, sources or {})
            if isinstance(parsed, Problem):
                problems.append(Problem(f"{where}.inputs[{position}]", parsed.message))
            else:
                inputs.append(parsed)
        outputs = item.get("outputs") or []
        if not isinstance(outputs, list) or not all(isinstance(o, str) for o in outputs):
            problems.append(Problem(f"{where}.outputs", "must be an array of field names"))
            outputs = []
        operations.append(FieldOperation(name, description, inputs=inputs, outputs=outputs))
    if problems:
        raise InvalidInput(problems)
    return operations


def _input_from_json(
    value: object, earlier: Sequence[FieldOperation], sources: Mapping[str, Source]
) -> FieldInput | Problem:
    if isinstance(value, str):
        return sources.get(value, value)
    if not isinstance(value, dict):
        return Problem("", "an input must be a string or an object")
    kind = value.get("type")
    if kind == "source":
        namespace, name = value.get("namespace"), value.get("name")
        if not (isinstance(namespace, str) and isinstance(name, str)):
            return Problem("", "a source input needs string namespace and name")
        description = value.get("description")
        return Source(namespace, name, description if isinstance(description, str) else None)
    if kind == "field":
        name, origin = value.get("name"), value.get("origin")
        if not isinstance(name, str):
            return Problem("", "a field input needs a string name")
        if origin is None:
            return name
        if not isinstance(origin, int) or isinstance(origin, bool):
            return Problem("", "origin must be the position of an earlier operation")
        if not 0 <= origin < len(earlier):
            return Problem("", f"origin {origin} is not the position of an earlier operation")
        if name not in earlier[origin].outputs:
            return Problem(
                "", f"operation {origin} ({earlier[origin].name!r}) has no output {name!r}"
            )
        return earlier[origin].output(name)
    return Problem("", 'type must be "source" or "field"')


def operation_set_from_stored(raw: Sequence[Mapping[str, Any]]) -> OperationSet:
    """An operation set as stored by ingestion (already validated)."""
    steps = []
    for index, item in enumerate(raw):
        inputs: list[SourceRef | FieldRef] = [
            SourceRef(i["namespace"], i["name"])
            if i["type"] == "source"
            else FieldRef(i["name"], int(i["origin"]))
            for i in item["inputs"]
        ]
        steps.append(
            Step(index, item["name"], item["description"], tuple(inputs), tuple(item["outputs"]))
        )
    return OperationSet(steps)
