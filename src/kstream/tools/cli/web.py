"""`kstream console`: serve the web console (kstream.tools.web) over one or more clusters.

Checks every cluster before it listens (a missing one is an error: the console
creates nothing), starts one metrics sampler per cluster (writing to
``__kstream_metrics`` unless ``--read-only``; ``--csv-dir`` also appends each
round to CSV files), prints its URL and serves with uvicorn until interrupted.
"""

from __future__ import annotations

import click

from kstream.errors import ConfigError
from kstream.tools import web as console  # the package face: FastAPI loads only when a console starts
from kstream.tools.web.clusters import check_clusters, parse_cluster_option, read_clusters_file
from kstream.tools.web.limits import DEFAULT_SAMPLE_INTERVAL_S, ConsoleLimits

MAX_SAMPLE_INTERVAL_S = 3600.0
MIN_SAMPLE_INTERVAL_S = 1.0
# Host names a console on a loopback address answers to (DNS rebinding protection, see
# kstream.tools.web.app.create_app); a console on another address answers to any name.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


@click.command("console")
@click.option("--cluster", "cluster_options", multiple=True, metavar="[NAME=]PATH",
              help="A cluster to serve (repeat); named by its directory's base name unless NAME= is given. "
                   "Default: the global --cluster.")
@click.option("--clusters-file", type=click.Path(exists=True, dir_okay=False),
              help='TOML: [clusters.NAME] tables with path = "...".')
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True)
@click.option("--read-only", is_flag=True, help="Refuse every change (403) and write no metrics.")
@click.option("--sample-interval-s", type=float, default=10.0, show_default=True,
              help="Seconds between metric samples (0: no sampler).")
@click.option("--csv-dir", type=click.Path(file_okay=False), help="Also write each sample round as CSV here.")
@click.option("--decode-max-bytes", type=int, default=ConsoleLimits.decode_max_bytes, show_default=True,
              help="The largest value the message browser decodes as Avro.")
@click.option("--decode-max-items", type=int, default=ConsoleLimits.decode_max_items, show_default=True,
              help="Array/map items one Avro value may hold to be decoded.")
@click.option("--decode-budget-ms", type=int, default=ConsoleLimits.decode_budget_ms, show_default=True,
              help="Time one page of the message browser may spend decoding.")
@click.option("--max-tails", type=int, default=ConsoleLimits.tail_max, show_default=True,
              help="Live tails open at once on the console (more are refused with 429).")
@click.option("--max-tails-per-client", type=int, default=ConsoleLimits.tail_max_per_client, show_default=True,
              help="Live tails open at once per client address.")
@click.option("--max-group-streams", type=int, default=ConsoleLimits.group_live_max, show_default=True,
              help="Groups' live lag streams open at once on the console (more are refused with 429).")
@click.option("--max-group-streams-per-client", type=int, default=ConsoleLimits.group_live_max_per_client,
              show_default=True, help="Groups' live lag streams open at once per client address.")
@click.pass_context
def console_command(ctx: click.Context, cluster_options: tuple[str, ...], clusters_file: str | None, host: str,
                    port: int, read_only: bool, sample_interval_s: float, csv_dir: str | None,
                    decode_max_bytes: int, decode_max_items: int, decode_budget_ms: int, max_tails: int,
                    max_tails_per_client: int, max_group_streams: int, max_group_streams_per_client: int) -> None:
    """Serve the web console: topics, groups and lag, messages, reassignment, /metrics."""
    limits = ConsoleLimits(decode_max_bytes=decode_max_bytes, decode_max_items=decode_max_items,
                           decode_budget_ms=decode_budget_ms, tail_max=max_tails,
                           tail_max_per_client=max_tails_per_client, group_live_max=max_group_streams,
                           group_live_max_per_client=max_group_streams_per_client)  # checked before anything opens

    refs = [parse_cluster_option(v) for v in cluster_options]
    if clusters_file:
        refs += read_clusters_file(clusters_file)
    if not refs:
        refs = [parse_cluster_option(ctx.obj["cluster"])]
    clusters = check_clusters(refs)
    if sample_interval_s != 0 and not MIN_SAMPLE_INTERVAL_S <= sample_interval_s <= MAX_SAMPLE_INTERVAL_S:
        raise ConfigError(f"--sample-interval-s {sample_interval_s}: give 0 (no sampler) or "
                          f"{MIN_SAMPLE_INTERVAL_S:g}..{MAX_SAMPLE_INTERVAL_S:g}")
    serve(clusters, host, port, read_only, sample_interval_s, csv_dir, limits)


def serve(clusters: dict, host: str, port: int, read_only: bool, sample_interval_s: float,
          csv_dir: str | None, limits: ConsoleLimits | None = None) -> None:
    import uvicorn

    running = sample_interval_s > 0
    # Not running (--sample-interval-s 0): samplers that sample only when /metrics asks, and
    # then write nothing (a GET must not write).
    samplers = console.make_samplers(clusters, sample_interval_s if running else DEFAULT_SAMPLE_INTERVAL_S,
                             write=running and not read_only, csv_dir=csv_dir if running else None)
    loopback = host in LOOPBACK_HOSTS
    app = console.create_app(clusters, read_only=read_only, samplers=samplers,
                     allowed_hosts=LOOPBACK_HOSTS if loopback else None, limits=limits)
    if running:
        for sampler in samplers.values():
            sampler.start()
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"kstream console on http://{shown}:{port}/ serving {', '.join(clusters)}"
               + (" (read-only)" if read_only else ""))
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        for sampler in samplers.values():
            sampler.stop()
