"""`kstream dump-log`: the frames of segment files, with header fields and checksum verdicts."""

from __future__ import annotations

import os

import click

from kstream.log import format as fmt
from kstream.log.frames import FrameWalk, pread_from
from kstream.log.output import StoredBatch
from kstream.log.records import PayloadCodec


@click.command("dump-log")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--print-data", is_flag=True, help="Print the records of each frame.")
@click.option("--max-frames", type=int, default=None, help="Stop after this many frames per file.")
def dump_log(files: tuple[str, ...], print_data: bool, max_frames: int | None) -> None:
    """Print every frame of segment FILES (.log) and check both checksums."""
    codec = PayloadCodec()
    bad = 0
    for path in files:
        click.echo(f"Dumping {path}")
        frames = 0
        with open(path, "rb") as f:
            walk = FrameWalk(pread_from(f.fileno()), os.fstat(f.fileno()).st_size)
            for position, header in walk:
                if max_frames is not None and frames >= max_frames:
                    break
                payload = os.pread(f.fileno(), header.payload_size, position + fmt.HEADER_SIZE)
                crc_ok = fmt.crc32c(payload) == header.payload_crc
                bad += not crc_ok
                click.echo(
                    f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
                    f"count: {header.record_count} position: {position} size: {header.frame_size} "
                    f"leaderEpoch: {header.leader_epoch} producerId: {header.producer_id} "
                    f"producerEpoch: {header.producer_epoch} baseSequence: {header.base_sequence} "
                    f"minTimestamp: {header.min_timestamp} maxTimestamp: {header.max_timestamp} "
                    f"compression: {header.codec} "
                    f"timestampType: {'LogAppendTime' if header.attributes & fmt.LOG_APPEND_TIME else 'CreateTime'} "
                    f"headerCrc: {header.header_crc} crc: {header.payload_crc} "
                    f"isValid: {str(crc_ok).lower()}")
                if print_data and crc_ok:
                    batch = codec.decode(payload, header.schema_length)
                    stored = StoredBatch(header.base_offset, batch, header.max_timestamp, False)
                    for i, row in enumerate(stored.batch.to_pylist()):
                        click.echo(f"| offset: {header.base_offset + i} {row}")
                frames += 1
            if walk.problem is not None:  # (None too when --max-frames stopped the walk)
                click.echo(f"position: {walk.position} INVALID: {walk.problem}")
                bad += 1
    if bad:
        raise click.ClickException(f"{bad} invalid frame(s)")
