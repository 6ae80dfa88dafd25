"""Consumer groups: membership between processes, and committed offsets in a Delta table.

The names below are imported on first use (module ``__getattr__``, :mod:`kstream._lazy`), so
importing a light leaf (``kstream.groups.transactional_offsets``, which every client loads)
does not load the Delta table's deltalake until a group's offsets are read or written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kstream._lazy import lazy_exports

if TYPE_CHECKING:  # what the lazy names are, for type checkers and editors
    from kstream.groups.assignors import ASSIGNORS, range_assignor, roundrobin_assignor
    from kstream.groups.coordinator import Coordinator, Group, Member, MemberSpec
    from kstream.groups.offsets_table import (
        CommittedOffset,
        OffsetsHistoryError,
        OffsetsTable,
        OffsetsTableLostError,
    )
    from kstream.groups.service import ConsumerGroups, GroupDescription, OffsetCommit, PartitionLag

# Public name -> the module that defines it (imported on first use).
_LAZY = {
    "ASSIGNORS": "kstream.groups.assignors",
    "CommittedOffset": "kstream.groups.offsets_table",
    "ConsumerGroups": "kstream.groups.service",
    "Coordinator": "kstream.groups.coordinator",
    "Group": "kstream.groups.coordinator",
    "GroupDescription": "kstream.groups.service",
    "Member": "kstream.groups.coordinator",
    "MemberSpec": "kstream.groups.coordinator",
    "OffsetCommit": "kstream.groups.service",
    "OffsetsHistoryError": "kstream.groups.offsets_table",
    "OffsetsTable": "kstream.groups.offsets_table",
    "OffsetsTableLostError": "kstream.groups.offsets_table",
    "PartitionLag": "kstream.groups.service",
    "range_assignor": "kstream.groups.assignors",
    "roundrobin_assignor": "kstream.groups.assignors",
}

__all__ = ["ASSIGNORS", "CommittedOffset", "ConsumerGroups", "Coordinator", "Group",
           "GroupDescription", "Member", "MemberSpec", "OffsetCommit", "OffsetsHistoryError",
           "OffsetsTable", "OffsetsTableLostError", "PartitionLag", "range_assignor", "roundrobin_assignor"]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
