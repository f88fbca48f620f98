"""API keys: made, verified, listed and revoked; only a hash on disk; no string but the key itself opens it."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.access import ROLES, Keys, allows
from ragloom.errors import ConfigError, InvalidParameterError


def test_a_key_is_made_verified_and_revoked(tmp_path: Path) -> None:
    keys = Keys(tmp_path)
    assert not keys.configured and keys.list() == [] and keys.verify("anything") is None
    grant, key = keys.create(tenant="acme", role="write", name="ci")
    assert keys.configured and key.startswith(f"rlk_{grant.id}_")
    assert keys.verify(key) == grant and (grant.tenant, grant.role, grant.name) == ("acme", "write", "ci")
    stored = (tmp_path / "keys.json").read_text(encoding="utf-8")
    assert key.split("_", 2)[2] not in stored  # the secret is never written, only its hash
    assert stat.S_IMODE((tmp_path / "keys.json").stat().st_mode) == 0o600
    other, other_key = keys.create(tenant="beta", role="read")
    assert [g.id for g in keys.list()] == [grant.id, other.id]
    assert keys.verify(key[:-1] + ("A" if key[-1] != "A" else "B")) is None  # one character off
    assert keys.revoke("ci") == grant and keys.verify(key) is None and keys.verify(other_key) == other
    # Another process (the CLI) revokes: a server's Keys sees it at its next read.
    Keys(tmp_path).revoke(other.id)
    assert keys.verify(other_key) is None and not keys.configured


def test_bad_arguments_name_the_option(tmp_path: Path) -> None:
    keys = Keys(tmp_path)
    with pytest.raises(InvalidParameterError, match="--role 'owner'"):
        keys.create(tenant="a", role="owner")
    with pytest.raises(InvalidParameterError, match="--tenant"):
        keys.create(tenant="../etc", role="read")
    keys.create(tenant="a", name="same")
    with pytest.raises(InvalidParameterError, match="--name 'same'"):
        keys.create(tenant="a", name="same")
    with pytest.raises(InvalidParameterError, match="ragloom keys list"):
        keys.revoke("nope")
    (tmp_path / "keys.json").write_text("{broken", encoding="utf-8")
    with pytest.raises(ConfigError, match="keys.json"):
        Keys(tmp_path).configured  # noqa: B018 - reads the file


def test_roles_are_ordered() -> None:
    assert [allows("read", r) for r in ROLES] == [True, False, False]
    assert [allows("write", r) for r in ROLES] == [True, True, False]
    assert all(allows("admin", r) for r in ROLES)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Keys, str]:
    keys = Keys(tmp_path_factory.mktemp("keys"))
    return keys, keys.create(tenant="t", role="admin")[1]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120) | st.from_regex(r"rlk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}", fullmatch=True))
def test_no_string_but_the_key_opens_it(made: tuple[Keys, str], token: str) -> None:
    keys, key = made
    assert (keys.verify(token) is not None) == (token == key)
    assert json.loads(keys.path.read_text(encoding="utf-8"))["keys"][0]["sha256"] not in token
