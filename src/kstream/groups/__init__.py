"""Consumer groups: membership between processes, and committed offsets in a Delta table."""

from kstream.groups.assignors import ASSIGNORS, range_assignor, roundrobin_assignor
from kstream.groups.coordinator import Coordinator, Group, Member, MemberSpec
from kstream.groups.offsets_table import CommittedOffset, OffsetsHistoryError, OffsetsTable, OffsetsTableLostError
from kstream.groups.service import ConsumerGroups, GroupDescription, OffsetCommit, PartitionLag

__all__ = ["ASSIGNORS", "CommittedOffset", "ConsumerGroups", "Coordinator", "Group",
           "GroupDescription", "Member", "MemberSpec", "OffsetCommit", "OffsetsHistoryError",
           "OffsetsTable", "OffsetsTableLostError", "PartitionLag", "range_assignor", "roundrobin_assignor"]
