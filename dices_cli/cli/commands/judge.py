"""`dices judge`: run an LLM judge or a safety classifier over DICES or ProsocialDialog."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dices_cli.cli.commands.options import (
    MEMBERS_THEN_ALL,
    DataDir,
    Force,
    OutputFile,
    OutputFormat,
    registered,
)
from dices_cli.cli.render import say

if TYPE_CHECKING:
    from dices_cli.judge.batch import ReadBack
    from dices_cli.judge.plan import Settings
    from dices_cli.judge.run import Outcome, Progress
    from dices_cli.store.datasets import Store

API_KEY_VARIABLE = "OPENAI_API_KEY"


def finite(param: typer.CallbackParam, value: float | None) -> float | None:
    """A number option's value when it is finite (Click's min and max let NaN through)."""
    import math

    from dices_cli.errors import UsageError

    if value is not None and not math.isfinite(value):
        raise UsageError(f"{param.opts[0]} {value}: give a finite number")
    return value


def endpoint_urls(values: list[str] | None) -> list[str] | None:
    """--base-url's values when each is an http(s) URL with a host and a valid port."""
    from dices_cli.errors import UsageError
    from dices_cli.judge.client import check_base_url
    from dices_cli.terminal_text import printable

    for url in values or []:
        reason = check_base_url(url)
        if reason is not None:
            raise UsageError(f"--base-url {printable(url)}: {reason}")
    return values


JUDGE_HELP = """Run an LLM judge or a safety classifier over DICES or ProsocialDialog: cached, resumable, polarity declared, straight into evaluate.

Each conversation is sent to an OpenAI-compatible Chat Completions endpoint (vLLM, Ollama, llama.cpp's server, TGI, LM Studio, OpenAI, a gateway) with a declared prompt (--prompt: dices-safety, judge-bench, guard, or a TOML file of your own), and its answer read as the prompt's answers table says (Yes = unsafe for dices-safety, Yes = safe for judge-bench). An answer that cannot be read is kept raw and counted, never guessed. The key comes from $OPENAI_API_KEY (or the variable --api-key-env names) and is written nowhere.

Every answer is cached in the data directory (DIR/judge/; dices sql sees it as judge_calls): running the same command again asks nothing, and a run stopped by Ctrl-C, kill -9 or a failing server resumes where it stopped. The predictions (model, item_id, label, score, p_*, prompt, persona) are what dices evaluate reads; -o FILE also gets FILE.judge.json, the run's manifest.

--model baseline:always-unsafe, baseline:always-safe or baseline:random needs no server.

Examples:

    dices judge --model baseline:random -o random.csv --evaluate

    dices judge --model meta-llama/Llama-3.1-8B-Instruct --base-url http://localhost:8000/v1 -o llama.csv

    dices judge --model gpt-4o-mini --samples 5 -d 990 --dry-run

    dices judge --model llama3.1 --base-url http://localhost:11434/v1 --persona rater_gender -o personas.csv
"""  # noqa: E501 (Rich wraps each paragraph to the terminal)


def judge(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="The model name the endpoint knows, or baseline:always-unsafe|always-safe|random.",
        ),
    ],
    base_url: Annotated[
        list[str] | None,
        typer.Option(
            "--base-url",
            metavar="URL",
            help="The endpoint (default https://api.openai.com/v1); repeat to spread the "
            "requests over replicas of one model.",
            callback=endpoint_urls,
        ),
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            "--api-key-env",
            metavar="VARIABLE",
            help=f"The environment variable holding the API key (default {API_KEY_VARIABLE}).",
        ),
    ] = None,
    dataset: Annotated[
        str,
        typer.Option(
            "--dataset",
            "-d",
            click_type=registered(*MEMBERS_THEN_ALL),
            help="The conversations to judge.",
        ),
    ] = "350",
    prompt: Annotated[
        str,
        typer.Option(
            "--prompt",
            "-p",
            metavar="NAME|FILE",
            help="dices-safety, judge-bench, guard, or a file.",
        ),
    ] = "dices-safety",
    samples: Annotated[
        int,
        typer.Option(
            "--samples", min=1, max=100, help="Answers per conversation; more than 1 gives p_*."
        ),
    ] = 1,
    temperature: Annotated[
        float | None,
        typer.Option(
            "--temperature",
            min=0.0,
            max=2.0,
            help="Sampling temperature (default 0, or 1 with --samples above 1).",
            show_default=False,
            callback=finite,
        ),
    ] = None,
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", min=1, max=100_000, help="Longest answer, in tokens.")
    ] = 16,
    seed: Annotated[
        int | None,
        typer.Option("--seed", min=0, max=2**31 - 1, help="Sampling seed, sent to the endpoint."),
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, max=1024, help="Requests in flight at most.")
    ] = 8,
    rpm: Annotated[
        int | None,
        typer.Option(
            "--rpm", min=1, help="Requests started per minute at most.", show_default=False
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            min=0.1,
            max=86_400,
            help="Seconds to wait for one answer.",
            callback=finite,
        ),
    ] = 60.0,
    retries: Annotated[
        int,
        typer.Option(
            "--retries", min=0, max=100, help="Retries of a request after a 429, 5xx or timeout."
        ),
    ] = 5,
    persona: Annotated[
        str | None,
        typer.Option(
            "--persona",
            metavar="COLUMN",
            help="Judge each conversation once per group of this rater column (rater_gender, "
            "rater_race, rater_age, rater_locale, ...), as a simulated rater of that group.",
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, metavar="N", help="Only the first N conversations."),
    ] = None,
    items: Annotated[
        Path | None,
        typer.Option(
            "--items",
            metavar="FILE",
            dir_okay=False,
            help="Only these conversations: one item id a line, or a CSV with an item_id column.",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Say how many requests a run would make, and their tokens; ask none."
        ),
    ] = False,
    refresh: Annotated[
        bool, typer.Option("--refresh", help="Ask again what the cache already holds.")
    ] = False,
    no_logprobs: Annotated[
        bool,
        typer.Option(
            "--no-logprobs", help="Do not ask for logprobs (no score), for endpoints refusing them."
        ),
    ] = False,
    name: Annotated[
        str | None,
        typer.Option(
            "--name", metavar="LABEL", help="The model column's value (default: --model)."
        ),
    ] = None,
    batch: Annotated[
        Path | None,
        typer.Option(
            "--batch",
            metavar="FILE.jsonl",
            dir_okay=False,
            help="Write the requests the cache does not answer as an OpenAI Batch API input "
            "file (vllm run-batch reads it too), and stop; split into FILE.001.jsonl, ... at "
            "the limits below.",
        ),
    ] = None,
    batch_results: Annotated[
        list[Path] | None,
        typer.Option(
            "--batch-results",
            metavar="FILE.jsonl",
            dir_okay=False,
            help="Read a batch's output (and error) files into the cache, then finish the "
            "run from the cache; repeat for several files.",
        ),
    ] = None,
    batch_max_requests: Annotated[
        int,
        typer.Option("--batch-max-requests", min=1, help="Requests per batch file at most."),
    ] = 50_000,
    batch_max_bytes: Annotated[
        int,
        typer.Option("--batch-max-bytes", min=1024, help="Bytes per batch file at most."),
    ] = 200_000_000,
    submit: Annotated[
        bool,
        typer.Option(
            "--submit",
            help="Send the batch to the endpoint's Files and Batches API, wait for it, and "
            "read its results; the same command picks up a batch a stopped run sent.",
        ),
    ] = False,
    batch_poll: Annotated[
        float,
        typer.Option(
            "--batch-poll",
            min=0.0,
            max=3600,
            metavar="SECONDS",
            help="With --submit: seconds between two looks at a batch.",
            callback=finite,
        ),
    ] = 60.0,
    price_in: Annotated[
        float | None,
        typer.Option(
            "--price-in",
            min=0.0,
            metavar="DOLLARS",
            help="Dollars per million input tokens, online (default: the prompt's [price]).",
            callback=finite,
        ),
    ] = None,
    price_out: Annotated[
        float | None,
        typer.Option(
            "--price-out",
            min=0.0,
            metavar="DOLLARS",
            help="Dollars per million output tokens, online (default: the prompt's [price]).",
            callback=finite,
        ),
    ] = None,
    then_evaluate: Annotated[
        bool, typer.Option("--evaluate", help="Run dices evaluate on the predictions written.")
    ] = False,
    data: DataDir = None,
    fmt: OutputFormat = None,
    output: OutputFile = None,
    force: Force = False,
) -> None:
    from dices_cli.cli.render import show
    from dices_cli.errors import UsageError
    from dices_cli.judge.plan import DEFAULT_BASE_URL, Settings
    from dices_cli.judge.prompts import load_prompt
    from dices_cli.output import Output
    from dices_cli.store.datasets import Store, resolve_data_dir

    check_batch_options(batch, batch_results, dry_run, output, then_evaluate, refresh)
    if submit and (batch is not None or batch_results or dry_run or refresh):
        raise UsageError(
            "--submit writes, sends and reads the batch itself: it takes no --batch, "
            "--batch-results, --dry-run or --refresh"
        )
    if then_evaluate and output is None:
        raise UsageError("--evaluate reads the predictions file: give -o FILE")
    if then_evaluate and persona is not None:
        raise UsageError(
            "--evaluate scores one row per conversation; a --persona file has one per group "
            "(docs/judge.md says how to score it)"
        )
    settings = Settings(
        model=model,
        prompt=load_prompt(prompt),
        dataset=dataset,
        base_urls=tuple(dict.fromkeys(base_url or [DEFAULT_BASE_URL])),
        name=name,
        samples=samples,
        temperature=temperature,
        max_tokens=max_tokens,
        seed=seed,
        concurrency=concurrency,
        rpm=rpm,
        timeout=timeout,
        retries=retries,
        persona=persona,
        limit=limit,
        items=read_item_ids(items) if items is not None else None,
        refresh=refresh,
        logprobs=not no_logprobs,
        price_in=price_in,
        price_out=price_out,
    )
    if (price_in is None) != (price_out is None) and settings.prompt.price is None:
        raise UsageError("give both --price-in and --price-out (or a [price] in the prompt)")
    baseline = settings.baseline  # a usage error for an unknown baseline, before the work
    api_key = None if baseline is not None or dry_run else read_api_key(api_key_env)
    root = resolve_data_dir(data)
    store = Store(root)
    if dry_run:
        show_dry_run(store, settings)
        return
    inputs = [root, *([items] if items is not None else [])]
    if batch is not None:
        write_batch_files(store, settings, batch, (batch_max_requests, batch_max_bytes), force)
        return
    out = Output.build(fmt, output, force, inputs)  # a usage error before the work
    if output is not None:
        check_manifest(output, force, inputs)
    if batch_results:
        read_batch_results(store, settings, batch_results, api_key)
    if submit:
        submit_batch(store, settings, api_key, (batch_max_requests, batch_max_bytes), batch_poll)
    with progress_shown() as progress:
        asks = not (batch_results or submit)
        outcome = run_judge(store, settings, api_key, progress, ask_missing=asks)
    report_counts(outcome)
    show(outcome.table, out, title="judge")
    if output is not None:
        write_manifest(output, outcome, inputs, force)
    if then_evaluate and output is not None:
        evaluate_written(output, dataset, data)


def run_judge(
    store: Store,
    settings: Settings,
    api_key: str | None,
    progress: Callable[[Progress], None] | None,
    ask_missing: bool = True,
) -> Outcome:
    from dices_cli.judge.run import judge as run

    return run(store, settings, api_key, progress, ask_missing)


def check_batch_options(
    batch: Path | None,
    batch_results: list[Path] | None,
    dry_run: bool,
    output: Path | None,
    then_evaluate: bool,
    refresh: bool,
) -> None:
    from dices_cli.errors import UsageError

    if batch is not None:
        if batch_results:
            raise UsageError("--batch writes a batch, --batch-results reads one: give one")
        if dry_run:
            raise UsageError("--batch writes files: it is no dry run (drop --dry-run)")
        if output is not None or then_evaluate:
            raise UsageError(
                "--batch stops once the batch is written: give -o (and --evaluate) with "
                "--batch-results"
            )
    if batch_results and (dry_run or refresh):
        raise UsageError(
            f"--batch-results reads answers into the cache: it takes no "
            f"{'--dry-run' if dry_run else '--refresh'}"
        )


def write_batch_files(
    store: Store, settings: Settings, path: Path, limits: tuple[int, int], force: bool
) -> None:
    """Write the batch, each file's name on stdout, what was written on stderr."""
    from dices_cli.judge.batch import Limits, write_batch

    written = write_batch(store, settings, path, Limits(*limits), force, (store.root,))
    for part in written.files:
        print(part.path)
    say(
        f"batch: {written.requests} requests in {len(written.files)} files "
        f"({written.cached} of {written.calls} calls answered by the cache); submit each "
        "to a Batch API or vllm run-batch, then run the same command with --batch-results "
        "OUTPUT.jsonl in place of --batch"
    )


def submit_batch(
    store: Store, settings: Settings, api_key: str | None, limits: tuple[int, int], poll: float
) -> None:
    """Send the batch (or pick up a stopped run's), wait for it, and read its results."""
    from dices_cli.judge.batch import Limits
    from dices_cli.judge.submit import submit

    submitted = submit(store, settings, api_key, Limits(*limits), poll, say)
    for batch in submitted.batches:
        say(f"batch {batch['id']}: {batch['status']}")
    show_read_back(submitted.read)


def read_batch_results(
    store: Store, settings: Settings, paths: list[Path], api_key: str | None
) -> None:
    """Read a batch's results into the cache, saying what they held."""
    from dices_cli.judge.batch import read_results

    show_read_back(read_results(store, settings, paths, api_key))


def show_read_back(read: ReadBack) -> None:
    from dices_cli.terminal_text import printable

    say(
        f"batch results: {read.answered} answers and {read.failed} failed requests cached, "
        f"{read.already_cached} already cached, {read.problem_count} lines not results "
        "of this run"
    )
    for problem in read.problems[:10]:
        which = f" ({printable(problem.custom_id)})" if problem.custom_id else ""
        say(f"  {printable(str(problem.path))} line {problem.line}{which}: {problem.problem}")
    if read.problem_count > 10:
        say(f"  ... and {read.problem_count - 10} more")


def read_api_key(variable: str | None) -> str | None:
    """The key from $OPENAI_API_KEY, or from the variable named; never shown."""
    from dices_cli.errors import UsageError

    key = os.environ.get(variable or API_KEY_VARIABLE) or None
    if variable is not None and key is None:
        raise UsageError(f"--api-key-env {variable}: that environment variable is not set")
    if key is not None and (
        not key.isascii() or any(not c.isprintable() or c.isspace() for c in key)
    ):
        raise UsageError(
            f"the API key in ${variable or API_KEY_VARIABLE} has spaces, control or non-ASCII "
            "characters, which an HTTP header cannot carry"
        )
    return key


def read_item_ids(path: Path) -> tuple[str, ...]:
    """Item ids from a file: one a line, or a CSV whose header names item_id."""
    import csv

    from dices_cli.errors import DicesError

    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise DicesError(f"cannot read --items {path}: {reason}") from error
    rows = [row for row in csv.reader(text.splitlines()) if any(c.strip() for c in row)]
    if not rows:
        raise DicesError(f"--items {path} holds no item ids")
    header = [c.strip() for c in rows[0]]
    if "item_id" in header:
        column = header.index("item_id")
        ids = [row[column].strip() for row in rows[1:] if len(row) > column]
    else:
        ids = [row[0].strip() for row in rows]
    return tuple(dict.fromkeys(i for i in ids if i))


def show_dry_run(store: Store, settings: Settings) -> None:
    from dices_cli.judge.run import dry_run

    planned = dry_run(store, settings)
    print(f"calls: {planned.calls}")
    print(f"cached: {planned.cached}")
    print(f"requests to make: {planned.to_ask}")
    # How each figure is reached, on its own line: a person reads the estimate's basis.
    print(
        f"prompt tokens (estimated, offline: words, numbers and punctuation as GPT-style "
        f"tokenizers split them, plus the chat format's): {planned.prompt_tokens}"
    )
    print(
        f"answer tokens (at most: --max-tokens {settings.max_tokens} x "
        f"{planned.to_ask} requests): {planned.completion_tokens}"
    )
    print(f"estimated tokens (prompt + answer): {planned.estimated_tokens}")
    if planned.cost is not None:
        print(
            f"cost at ${planned.cost['price_in']:g} in / ${planned.cost['price_out']:g} out per "
            f"million tokens (at most: every answer --max-tokens long): online "
            f"${planned.cost['online']:,.4f}, batch ${planned.cost['batch']:,.4f}"
        )


@contextlib.contextmanager
def progress_shown() -> Iterator[Callable[[Progress], None] | None]:
    """A progress bar on stderr when it is a terminal and -q is not given."""
    from dices_cli.cli.render import is_quiet, stderr_console

    if is_quiet() or not sys.stderr.isatty():
        yield None
        return
    import time

    import rich.progress as bars

    columns = (
        bars.TextColumn("judging"),
        bars.BarColumn(),
        bars.MofNCompleteColumn(),
        bars.TimeRemainingColumn(),
        bars.TextColumn("{task.fields[info]}"),
    )
    with bars.Progress(*columns, console=stderr_console(), transient=True) as bar:
        task = bar.add_task("judging", total=None, info="")

        def update(state: Progress) -> None:
            asked = state.done - state.cached
            elapsed = max(time.monotonic() - state.started, 1e-9)
            info = (
                f"{asked / elapsed:.1f}/s, {state.tokens:,} tokens, "
                f"{state.cached:,} cached, {state.failures} failed"
            )
            bar.update(task, total=state.total, completed=state.done, info=info)

        yield update


def report_counts(outcome: Outcome) -> None:
    counts = outcome.counts
    say(
        f"judged {counts['items']} conversations: {counts['calls']} calls, "
        f"{counts.get('requests', 0)} asked, {counts.get('cache_hits', 0)} from the cache, "
        f"{counts.get('failed_attempts', 0)} failed attempts retried, "
        f"{counts.get('tokens', 0):,} tokens"
    )
    if counts.get("unreadable_logprobs"):
        say(
            f"warning: {counts['unreadable_logprobs']} answers came with logprobs that are not "
            "log probabilities (NaN, above 0, text): they have no score (dices sql "
            '"SELECT answer, error FROM judge_calls WHERE ok AND error IS NOT NULL")'
        )
    if counts.get("unreadable"):
        say(
            f"warning: {counts['unreadable']} answers could not be read (kept raw in the cache: "
            'dices sql "SELECT * FROM judge_calls WHERE ok AND verdict IS NULL"); '
            f"{counts['without_prediction']} conversations have no prediction"
        )


def check_manifest(output: Path, force: bool, inputs: list[Path]) -> None:
    """Refuse, before the work, a manifest path that exists (without --force) or is a
    symbolic link (ever: its target would be written)."""
    from dices_cli.errors import DicesError
    from dices_cli.judge.run import manifest_path
    from dices_cli.output import check_output

    manifest = manifest_path(output)
    if manifest.is_symlink():
        raise DicesError(
            f"{manifest} is a symbolic link; dices does not write through one: remove it"
        )
    if manifest.exists() and not manifest.is_file():
        raise DicesError(f"{manifest} exists and is not a file; remove it or choose another -o")
    check_output(manifest, force, inputs)


def write_manifest(output: Path, outcome: Outcome, inputs: list[Path], force: bool) -> None:
    from dices_cli.judge.run import manifest_path
    from dices_cli.output import open_output

    check_manifest(output, force, inputs)  # again: it may have appeared during the run
    manifest = manifest_path(output)
    with open_output(manifest, force=force, inputs=inputs) as handle:
        handle.write(json.dumps(outcome.manifest, indent=2, ensure_ascii=False).encode() + b"\n")


def evaluate_written(output: Path, dataset: str, data: Path | None) -> None:
    from dices_cli.cli.commands.evaluate import evaluate

    evaluate(str(output), dataset=dataset, data=data)


def register(app: typer.Typer) -> None:
    app.command(help=JUDGE_HELP, no_args_is_help=True)(judge)
