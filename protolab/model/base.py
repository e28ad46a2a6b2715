"""The one pydantic base of protolab's models."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict


# No docstring: a model's JSON schema takes its description from the docstring, and subclasses without
# one of their own must not inherit this one's into experiments/schema.json.
class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")  # unknown fields are errors: a typo is reported, not ignored


NAME_RE = r"^[a-z][a-z0-9_-]*$"  # names of experiments, phases, tables, knees, plots
COLUMN_RE = r"^[a-z][a-z0-9_]*$"  # tidy columns and sweep axes


def axis_str(value: Any) -> str:
    """How an axis value is written in tidy.csv and compared in `where` filters and `skip`: a mapping with a `name`
    by its name (an axis of named settings, e.g. {name: loss1, faults: [...]}), other mappings and null as JSON."""
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return value["name"]
    if isinstance(value, (dict, list)) or value is None:
        return json.dumps(value, sort_keys=True)
    return str(value)
