"""`dpcalc pipelines`: every named pipeline, what it is and the model it maps to — the table
``--pipeline`` reads (pipelines/names.py), and the "Which --sampling is my
pipeline?" table of docs/models.md (markdown_table; tests/test_pipelines.py checks it)."""
from __future__ import annotations

import sys

from dpcalc.cli import options as opt
from dpcalc.cli.output.render import OutputFormat, json_text
from dpcalc.pipelines.names import PIPELINES, UNIT_WORDS


def markdown_table() -> str:
    """The pipelines as a Markdown table (docs/models.md's table is exactly this)."""
    lines = ["| pipeline (`--pipeline`) | what it is | `--sampling` | default `--adjacency` | "
             "unit |", "|---|---|---|---|---|"]
    for pipeline in PIPELINES:
        sampling = pipeline.sampling + (" `--drop-last`" if pipeline.drop_last else "")
        needs = f" (give {pipeline.needs})" if pipeline.needs else ""
        lines.append(f"| `{pipeline.name}` | {pipeline.what}{needs} | {sampling} | "
                     f"{pipeline.adjacency} | {pipeline.unit} |")
    return "\n".join(lines) + "\n"


def pipelines_command(output_format: OutputFormat = opt.FORMAT) -> None:
    """The data pipelines dpcalc knows by name (`--pipeline NAME` in epsilon, delta, sigma,
    risk, report and compare), what each one is and the model (sampler, adjacency, unit)
    its certificate is for.

    Pipelines that fix each record's position in an order (shuffle, sequential,
    once-per-epoch) default to zero-out adjacency: under add/remove no certificate is
    known for them. A federated server drawing exactly m of M clients per round is
    `flower` (fixed sampling, --batch-size m --dataset-size M, --unit client).

    Example: dpcalc pipelines

    Example: dpcalc epsilon --pipeline torch-shuffle --batch-size 256 --dataset-size 60000
    --sigma 1.1 --epochs 60
    """
    records = [pipeline.record() for pipeline in PIPELINES]
    if output_format == OutputFormat.json:
        sys.stdout.write(json_text({"command": "pipelines", "inputs": {}, "results": records,
                                    "units": UNIT_WORDS}) + "\n")
        return
    if output_format == OutputFormat.plain:
        sys.stdout.write("".join(f"{r['name']}\t{r['sampling']}\t{r['adjacency']}\t{r['unit']}"
                                 f"\t{'drop-last' if r['drop_last'] else '-'}\n" for r in records))
        return
    from rich.console import Console
    from rich.markup import escape

    console = Console()
    console.print("[bold]Data pipelines and the model each one is[/bold]")
    for record in records:
        flags = (f"--sampling {record['sampling']}{' --drop-last' if record['drop_last'] else ''}"
                 f" --adjacency {record['adjacency']} --unit {record['unit']}")
        console.print(f"\n[bold]{escape(record['name'])}[/bold] → {escape(flags)}",
                      highlight=False)
        what = record["what"] + (f" (give {record['needs']})" if record["needs"] else "")
        console.print(f"  {escape(what)}", highlight=False)
        console.print(f"  [dim]{escape(record['why'])}[/dim]", highlight=False)
        if record["aliases"]:
            console.print(f"  [dim]also: {escape(', '.join(record['aliases']))}[/dim]",
                          highlight=False)
    console.print()
    console.print("[dim]" + escape(
        "Zero-out: a record replaced by a null record with zero gradient; the relation with a "
        "certificate for loaders that fix positions in an order (under add/remove an inserted "
        "record shifts every later position). An explicit --adjacency overrides the default. "
        "Why each pipeline is its model: --format json (\"why\").") + "[/dim]", highlight=False)


__all__ = ["markdown_table", "pipelines_command"]
