"""The one pydantic base of protolab's models."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


# No docstring: a model's JSON schema takes its description from the docstring, and subclasses without
# one of their own must not inherit this one's into experiments/schema.json.
class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")  # unknown fields are errors: a typo is reported, not ignored


NAME_RE = r"^[a-z][a-z0-9_-]*$"  # names of experiments, phases, tables, knees, plots
COLUMN_RE = r"^[a-z][a-z0-9_]*$"  # tidy columns and sweep axes
