"""How many Python objects one row of a typed topic becomes, counted before it is converted.

A typed topic's value is Arrow columns, and Arrow stores some values in no
bytes at all: a ``list<null>`` of a billion nulls is a pair of 4-byte offsets
(the null child has no buffers), as is a list of empty structs or of
``fixed_size_binary(0)``. A consumer converting such a record to Python builds a
billion objects (396 bytes on disk became 20 million ``None`` in 2.8 s and
160 MiB). So a typed record becomes Python objects only once :func:`row_elements`
says it is within a named limit: ``decode.max.items`` of the Consumer
(:func:`kstream.log.storage.output.to_python_records`, for ``poll()``/``consume()`` and
``kstream consume``) and of the console's message browser.

Counting reads only lengths and offsets: slicing and ``flatten`` are zero-copy,
so it costs the row's nesting, plus one step per dictionary index and per
union child; it stops as soon as the count passes the limit. Dictionary,
run-end encoded and union arrays are counted generously (a value may be
counted more than once), which can only refuse a row, never let one through.
"""

from __future__ import annotations

import pyarrow as pa


def count_elements(array: pa.Array, limit: int) -> int:
    """The number of values ``array`` converts to, through every nested level (each list,
    map, struct, dictionary and run-end encoded child counted); once past ``limit`` the
    count stops and a number greater than ``limit`` is returned."""
    total = 0
    pending = [array]
    while pending and total <= limit:
        current = pending.pop()
        total += len(current)
        kind = current.type
        if isinstance(current, pa.StructArray):
            pending.extend(current.flatten())
        elif isinstance(current, pa.DictionaryArray):
            # Each index converts its dictionary entry again: count that entry per index.
            for index in current.indices.to_pylist()[: limit + 1]:
                if index is not None:
                    pending.append(current.dictionary.slice(index, 1))
        elif isinstance(current, pa.RunEndEncodedArray):
            # Each logical value converts its run's value: at most every value, once per row.
            if len(current.values):
                pending.extend([current.values] * min(len(current), limit + 1))
        elif isinstance(current, pa.MapArray):  # (no flatten kernel for maps: its entries, by offsets)
            if len(current):
                first, last = current.offsets[0].as_py(), current.offsets[-1].as_py()
                pending.append(current.values.slice(first, last - first))
        elif isinstance(current, pa.UnionArray):
            pending.extend(current.field(i) for i in range(kind.num_fields))
        elif hasattr(current, "flatten"):  # list, large list, list view, fixed-size list, map
            pending.append(current.flatten())
    return total


def row_elements(values: pa.RecordBatch, limit: int) -> int:
    """:func:`count_elements` over the columns of ``values`` (a one-row batch)."""
    total = 0
    for column in values.columns:
        total += count_elements(column, limit - total)
        if total > limit:
            break
    return total
