"""API keys: who may call ``ragloom serve`` and ``ragloom mcp``, for which tenant, with which role.

A key is ``rlk_<id>_<secret>``: the id names it (in ``ragloom keys list`` and in the server's
log), the secret is 32 random bytes that exist only in what :meth:`Keys.create` returns. The
workspace keeps the SHA-256 of the secret (a random 256-bit secret needs no slow hash: there is
nothing to guess), with the key's tenant, role and name, in ``keys.json`` (mode 0600), written
whole and replaced atomically.

A key is bound to one tenant: every request made with it reads and writes that tenant, whatever
the request names. Roles are ordered: ``read`` (search, ask, stats, graph, history), ``write``
(also upload documents and write reports) and ``admin`` (also ingest files from the server's disk
under ``server.ingest_roots``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, get_args

from ragloom.errors import ConfigError, InvalidParameterError

__all__ = ["KEYS_FILE", "ROLES", "Grant", "Keys", "Role", "allows"]

Role = Literal["read", "write", "admin"]
#: The roles, weakest first: each may do what the ones before it may.
ROLES: tuple[Role, ...] = get_args(Role)
#: The file under the workspace that holds the keys' hashes.
KEYS_FILE = "keys.json"
_PREFIX = "rlk"
_KEY = re.compile(rf"^{_PREFIX}_([0-9a-f]{{12}})_([A-Za-z0-9_-]{{43}})$")
_NAME = re.compile(r"^[\w.@-]{1,64}$")


def allows(role: Role, needed: Role) -> bool:
    """Whether a key of ``role`` may do what needs ``needed``."""
    return ROLES.index(role) >= ROLES.index(needed)


@dataclass(frozen=True)
class Grant:
    """What one key may do: its id and name, the one tenant it sees, its role."""

    id: str
    name: str
    tenant: str
    role: Role
    created: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


class Keys:
    """The API keys of one workspace (``<workspace>/keys.json``)."""

    def __init__(self, folder: str | Path) -> None:
        self.path = Path(folder) / KEYS_FILE
        # The file as last read, by its (inode, mtime, size): a server reads it again only when it
        # changed, so a key revoked by the CLI is refused from the next request on.
        self._seen: tuple[tuple[int, int, int], list[dict[str, str]]] | None = None

    def _read(self) -> list[dict[str, str]]:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ConfigError(f"{self.path}: the API keys cannot be read ({exc}); check the file's permissions") \
                from None
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        if self._seen is not None and self._seen[0] == stamp:
            return self._seen[1]
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{self.path}: the API keys cannot be read ({exc}); restore the file from a backup, "
                              f"or delete it and create the keys again with `ragloom keys create`") from None
        if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
            raise ConfigError(f"{self.path}: not a ragloom keys file (no \"keys\" list); delete it and create the "
                              "keys again with `ragloom keys create`")
        keys = [k for k in data["keys"] if isinstance(k, dict)]
        self._seen = (stamp, keys)
        return keys

    def _write(self, keys: list[dict[str, str]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".keys-", dir=self.path.parent)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"keys": keys}, out, indent=1)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, self.path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise

    @property
    def configured(self) -> bool:
        """Whether any key exists (then every request needs one)."""
        return bool(self._read())

    def list(self) -> list[Grant]:
        """Every key, oldest first (no secrets: the workspace has none)."""
        return [Grant(k["id"], k["name"], k["tenant"], k["role"], k["created"])  # type: ignore[arg-type]
                for k in self._read()]

    def create(self, *, tenant: str, role: str = "read", name: str | None = None) -> tuple[Grant, str]:
        """A new key for ``tenant`` with ``role``: its grant and the key itself, shown only this once."""
        if role not in ROLES:
            raise InvalidParameterError(f"--role {role!r} is not a role; use one of {', '.join(ROLES)}")
        if not tenant or not _NAME.match(tenant):
            raise InvalidParameterError(f"--tenant {tenant!r} is not a tenant name (1 to 64 letters, digits, "
                                        "'.', '-', '_' or '@')")
        keys = self._read()
        key_id = secrets.token_hex(6)
        name = name or f"{tenant}-{role}-{key_id[:4]}"
        if not _NAME.match(name):
            raise InvalidParameterError(f"--name {name!r} is not a key name (1 to 64 letters, digits, '.', '-', "
                                        "'_' or '@')")
        if any(k["name"] == name for k in keys):
            raise InvalidParameterError(f"--name {name!r}: a key of that name exists; pick another name or revoke "
                                        "it first")
        secret = secrets.token_urlsafe(32)
        grant = Grant(key_id, name, tenant, role, datetime.now(UTC).isoformat(timespec="seconds"))
        self._write([*keys, {**grant.to_dict(), "sha256": _digest(secret)}])
        return grant, f"{_PREFIX}_{key_id}_{secret}"

    def revoke(self, key: str) -> Grant:
        """Remove the key with this id or name; an unknown one is an error."""
        keys = self._read()
        kept = [k for k in keys if key not in (k["id"], k["name"])]
        if len(kept) == len(keys):
            raise InvalidParameterError(f"no API key has the id or name {key!r}; `ragloom keys list` shows them")
        gone = next(k for k in keys if key in (k["id"], k["name"]))
        self._write(kept)
        return Grant(gone["id"], gone["name"], gone["tenant"], gone["role"], gone["created"])  # type: ignore[arg-type]

    def verify(self, token: str | None) -> Grant | None:
        """The grant of a key, or None for no key, a malformed one, a revoked one or a wrong secret."""
        match = _KEY.match(token or "")
        if not match:
            return None
        key_id, secret = match.groups()
        for k in self._read():
            if k.get("id") == key_id and hmac.compare_digest(k.get("sha256", ""), _digest(secret)):
                return Grant(k["id"], k["name"], k["tenant"], k["role"], k["created"])  # type: ignore[arg-type]
        return None
