"""SCRAM credential value types, for porting code only: kstream has no SASL
(see ``_unsupported``); the AdminClient calls raise NotSupportedError."""

from __future__ import annotations

from enum import Enum


class ScramMechanism(Enum):
    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2


class ScramCredentialInfo:
    def __init__(self, mechanism: ScramMechanism, iterations: int):
        self.mechanism = mechanism
        self.iterations = iterations


class UserScramCredentialsDescription:
    def __init__(self, user: str, scram_credential_infos: list[ScramCredentialInfo]):
        self.user = user
        self.scram_credential_infos = scram_credential_infos


class UserScramCredentialAlteration:
    def __init__(self, user: str):
        self.user = user


class UserScramCredentialUpsertion(UserScramCredentialAlteration):
    def __init__(self, user: str, scram_credential_info: ScramCredentialInfo, password: bytes,
                 salt: bytes | None = None):
        super().__init__(user)
        self.scram_credential_info = scram_credential_info
        self.password = password
        self.salt = salt


class UserScramCredentialDeletion(UserScramCredentialAlteration):
    def __init__(self, user: str, mechanism: ScramMechanism):
        super().__init__(user)
        self.mechanism = mechanism
