"""The reader's schema enums equal torch's, so a schema change fails here rather than miscompiling."""

from __future__ import annotations

import dataclasses

import torch._export.serde.schema as schema

import luminal


def test_schema_major_version_matches_torch():
    assert luminal._C.schema_info()["major"] == schema.SCHEMA_VERSION[0]


def test_scalar_type_codes_match_torch():
    ours = luminal._C.schema_info()["scalar_types"]
    theirs = {member.name: member.value for member in schema.ScalarType}
    assert ours == theirs


def test_every_argument_kind_is_known():
    ours = set(luminal._C.schema_info()["argument_keys"])
    theirs = {field.name for field in dataclasses.fields(schema.Argument)}
    assert ours == theirs
