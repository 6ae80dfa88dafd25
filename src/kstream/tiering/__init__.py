"""Tiering: a topic's history copied into a Delta table (``tier.delta.path``), see docs/TIERING.md.

A room above the engine, beside ``groups`` (it writes Delta tables with ``deltalake``); the
storage engine never imports it. Names are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kstream._lazy import lazy_exports

if TYPE_CHECKING:
    from kstream.tiering.lake_reader import LakeSnapshot
    from kstream.tiering.lake_status import PartitionTierStatus, tier_status
    from kstream.tiering.lake_table import LakeTable, TierError
    from kstream.tiering.tierer import PartitionTiered, Tierer

_LAZY = {
    "LakeSnapshot": "kstream.tiering.lake_reader",
    "LakeTable": "kstream.tiering.lake_table",
    "PartitionTierStatus": "kstream.tiering.lake_status",
    "PartitionTiered": "kstream.tiering.tierer",
    "TierError": "kstream.tiering.lake_table",
    "Tierer": "kstream.tiering.tierer",
    "tier_status": "kstream.tiering.lake_status",
}

__all__ = [
    "LakeSnapshot",
    "LakeTable",
    "PartitionTierStatus",
    "PartitionTiered",
    "TierError",
    "Tierer",
    "tier_status",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
