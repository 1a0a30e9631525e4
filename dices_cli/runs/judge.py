"""`dices judge`: an LLM judge or a safety classifier over a dataset's conversations, with its
settings checked, its key read, its answers cached, and its predictions and manifest written.

`run_judge` is the command: a dry run (what a run would ask), a batch written (the requests
the cache does not answer, as Batch API input files), or a run (answers read back from a
batch, submitted as one, or asked online), whose predictions go to `output` (beside them its
manifest, FILE.judge.json) when one is given. Messages name parameters as `Option`s.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dices_cli.errors import DicesError, Option, UsageError
from dices_cli.families import SCORED_BY_DEFAULT
from dices_cli.runs.common import (
    Tell,
    check_choice,
    check_names,
    in_range,
    one_or_several,
    unsaid,
)

if TYPE_CHECKING:
    from dices_cli.judge.batch import ReadBack, Written
    from dices_cli.judge.plan import Settings
    from dices_cli.judge.run import DryRun, Outcome, Progress
    from dices_cli.output import Format, Output, Table
    from dices_cli.store.datasets import Store

API_KEY_VARIABLE = "OPENAI_API_KEY"
PROBLEMS_TOLD = 10  # a batch's results: the lines that are no results of the run, told at most

# A dry run's figures, and a batch's files, as a table's columns.
DRY_RUN_COLUMNS = ["calls", "cached", "requests", "prompt_tokens", "answer_tokens", "tokens"]
DRY_RUN_COLUMNS += ["cost_online", "cost_batch"]
BATCH_COLUMNS = ["path", "requests", "bytes"]
# A caller's names for the settings that are not JudgeSettings' own fields.
CALLER_NAMES = {"base_url": "base_urls"}

# The bounds of each number (inclusive; inf: none above), which the command line declares too.
BOUNDS: dict[str, tuple[float, float]] = {
    "samples": (1, 100),
    "temperature": (0.0, 2.0),
    "max_tokens": (1, 100_000),
    "seed": (0, 2**31 - 1),
    "concurrency": (1, 1024),
    "rpm": (1, math.inf),
    "timeout": (0.1, 86_400),
    "retries": (0, 100),
    "limit": (1, math.inf),
    "batch_max_requests": (1, math.inf),
    "batch_max_bytes": (1024, math.inf),
    "batch_poll": (0.0, 3600),
    "price_in": (0.0, math.inf),
    "price_out": (0.0, math.inf),
}


@dataclass(frozen=True)
class JudgeSettings:
    """A judge run as plain values; each is checked by `run_judge` before any work.

    `prompt` is a shipped prompt's name or a TOML file; `base_urls` the endpoint's replicas
    (none: OpenAI's); the key comes from the environment variable `api_key_env` (None:
    $OPENAI_API_KEY). `items` is a file of item ids. `batch` writes the batch input files
    and stops; `batch_results` reads a batch's output files into the cache; `submit` sends
    the batch and waits for it. `output` receives the predictions (in `format`, or as its
    extension says) and its manifest; `then_evaluate` says the caller scores that file once
    written (checked here with the rest)."""

    model: str
    dataset: str = SCORED_BY_DEFAULT
    prompt: str = "dices-safety"
    base_urls: tuple[str, ...] = ()
    api_key_env: str | None = None
    samples: int = 1
    temperature: float | None = None
    max_tokens: int = 16
    seed: int | None = None
    concurrency: int = 8
    rpm: int | None = None
    timeout: float = 60.0
    retries: int = 5
    persona: str | None = None
    limit: int | None = None
    items: Path | None = None
    dry_run: bool = False
    refresh: bool = False
    logprobs: bool = True
    name: str | None = None
    batch: Path | None = None
    batch_results: tuple[Path, ...] = ()
    batch_max_requests: int = 50_000
    batch_max_bytes: int = 200_000_000
    submit: bool = False
    batch_poll: float = 60.0
    price_in: float | None = None
    price_out: float | None = None
    output: Path | None = None
    format: Format | None = None
    force: bool = False
    then_evaluate: bool = False


@dataclass(frozen=True)
class JudgeResult:
    """What `run_judge` did: `planned` for a dry run, `written` for a batch, else `outcome`
    (the predictions `table`, the `counts` and the `manifest`) and `output`, where the
    predictions went (a file) or go (standard output, which the caller writes)."""

    planned: DryRun | None = None
    written: Written | None = None
    outcome: Outcome | None = None
    output: Output | None = None

    def table(self) -> Table:
        """The result as rows: the predictions; a dry run's figures (`DRY_RUN_COLUMNS`, one
        row); a batch's files (`BATCH_COLUMNS`, one row each)."""
        from dices_cli.output import table_from_rows

        if self.planned is not None:
            planned, cost = self.planned, self.planned.cost or {}
            counts = (planned.calls, planned.cached, planned.to_ask, planned.prompt_tokens)
            tokens = (planned.completion_tokens, planned.estimated_tokens)
            row = (*counts, *tokens, cost.get("online"), cost.get("batch"))
            return table_from_rows(DRY_RUN_COLUMNS, [row])
        if self.written is not None:
            rows = [(str(f.path), f.requests, f.bytes) for f in self.written.files]
            return table_from_rows(BATCH_COLUMNS, rows)
        assert self.outcome is not None
        return self.outcome.table


def judge_settings(**given: Any) -> JudgeSettings:
    """`JudgeSettings` from a Python caller's keyword arguments: `base_url` one URL or
    several, `batch_results` one file or several, each path a string or a path."""
    from dataclasses import fields

    taken = {f.name for f in fields(JudgeSettings)} - {"then_evaluate", *CALLER_NAMES.values()}
    check_names("judge", given, taken | set(CALLER_NAMES))
    values = {CALLER_NAMES.get(name, name): value for name, value in given.items()}
    values["base_urls"] = tuple(one_or_several(values.get("base_urls")))
    values["batch_results"] = tuple(map(Path, one_or_several(values.get("batch_results"))))
    for name in ("items", "batch", "output"):
        if values.get(name) is not None:
            values[name] = Path(values[name])
    if values.get("format") is not None:
        values["format"] = output_format(values["format"])
    return JudgeSettings(**values)


def output_format(given: str) -> Format:
    """The `Format` a caller names: csv, tsv, json, jsonl or parquet (a file's formats)."""
    from dices_cli.output import Format

    written = [f.value for f in Format if f not in (Format.TABLE, Format.CHART)]
    check_choice("format", str(given).lower(), written)
    return Format(str(given).lower())


def run_judge(
    store: Store,
    settings: JudgeSettings,
    progress: Callable[[Progress], None] | None = None,
    tell: Tell = unsaid,
) -> JudgeResult:
    """Run `settings` over the conversations of `store`: every setting is checked (and the
    key read, the items file parsed, the output and its manifest refused) before any work.
    `progress` hears of each answer; what a person is told on the way goes to `tell`."""
    from dices_cli.judge.batch import Limits, write_batch
    from dices_cli.judge.run import dry_run

    planned, api_key = judge_plan(settings)
    if settings.dry_run:
        return JudgeResult(planned=dry_run(store, planned))
    if settings.batch is not None:
        limits = Limits(settings.batch_max_requests, settings.batch_max_bytes)
        written = write_batch(store, planned, settings.batch, limits, settings.force, (store.root,))
        return JudgeResult(written=written)
    inputs = [store.root, *([settings.items] if settings.items is not None else [])]
    output = prepared_output(settings, inputs)
    outcome = _judged(store, settings, planned, api_key, progress, tell)
    tell_counts(outcome.counts, tell)
    if output.path is not None:
        output.write(outcome.table)
        write_manifest(output.path, outcome, inputs, settings.force)
    return JudgeResult(outcome=outcome, output=output)


def _judged(
    store: Store,
    settings: JudgeSettings,
    planned: Settings,
    api_key: str | None,
    progress: Callable[[Progress], None] | None,
    tell: Tell,
) -> Outcome:
    """The run: a batch's answers read into the cache (from its files, or sent and waited
    for), then the predictions from the cache, asking online what it does not answer."""
    from dices_cli.judge.batch import Limits, read_results
    from dices_cli.judge.run import judge
    from dices_cli.judge.submit import submit

    if settings.batch_results:
        tell_read_back(read_results(store, planned, list(settings.batch_results), api_key), tell)
    if settings.submit:
        limits = Limits(settings.batch_max_requests, settings.batch_max_bytes)
        submitted = submit(store, planned, api_key, limits, settings.batch_poll, tell)
        for batch in submitted.batches:
            tell(f"batch {batch['id']}: {batch['status']}")
        tell_read_back(submitted.read, tell)
    asks = not (settings.batch_results or settings.submit)
    return judge(store, planned, api_key, progress, asks)


# --- the checks, before any work ------------------------------------------------------------


def judge_plan(settings: JudgeSettings) -> tuple[Settings, str | None]:
    """The judge's own settings and the API key (None: a baseline or a dry run asks no
    server), every value checked."""
    from dices_cli.judge.declared import scale_values
    from dices_cli.judge.plan import DEFAULT_BASE_URL, Settings
    from dices_cli.judge.prompts import load_prompt

    check_base_urls(settings.base_urls)
    check_numbers(settings)
    check_batch_options(settings)
    check_evaluate(settings)
    planned = Settings(
        model=settings.model,
        prompt=load_prompt(settings.prompt),
        dataset=settings.dataset,
        base_urls=tuple(dict.fromkeys(settings.base_urls or [DEFAULT_BASE_URL])),
        name=settings.name,
        samples=settings.samples,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        seed=settings.seed,
        concurrency=settings.concurrency,
        rpm=settings.rpm,
        timeout=settings.timeout,
        retries=settings.retries,
        persona=settings.persona,
        limit=settings.limit,
        items=read_item_ids(settings.items) if settings.items is not None else None,
        refresh=settings.refresh,
        logprobs=settings.logprobs,
        price_in=settings.price_in,
        price_out=settings.price_out,
    )
    baseline = planned.model if planned.baseline is not None else None
    values = scale_values(planned.dataset, planned.prompt, baseline)
    planned = replace(planned, values=values)  # the dataset and the prompt checked
    if (settings.price_in is None) != (settings.price_out is None) and planned.prompt.price is None:
        raise UsageError(
            "give both ",
            Option("price_in"),
            " and ",
            Option("price_out"),
            " (or a [price] in the prompt)",
        )
    offline = planned.baseline is not None or settings.dry_run  # an unknown baseline: refused
    return planned, None if offline else read_api_key(settings.api_key_env)


def check_base_urls(urls: tuple[str, ...]) -> None:
    """Each endpoint an http(s) URL with a host and a valid port."""
    from dices_cli.judge.client import check_base_url
    from dices_cli.terminal_text import printable

    for url in urls:
        reason = check_base_url(url)
        if reason is not None:
            raise UsageError(Option("base_url"), f" {printable(url)}: {reason}")


def check_numbers(settings: JudgeSettings) -> None:
    """Each number finite and within its `BOUNDS`."""
    for name, (low, high) in BOUNDS.items():
        value = getattr(settings, name)
        if value is None:
            continue
        if not math.isfinite(value):
            raise UsageError(Option(name), f" {value}: give a finite number")
        if high == math.inf and value < low:
            raise UsageError(Option(name), f" must be at least {low:g} (got {value:g})")
        in_range(name, value, low, high)


def check_batch_options(settings: JudgeSettings) -> None:
    """A batch is written, read back or submitted: each alone, and never with a dry run."""
    if settings.batch is not None:
        check_batch_written(settings)
    if settings.batch_results and (settings.dry_run or settings.refresh):
        refused = Option("dry_run") if settings.dry_run else Option("refresh")
        raise UsageError(
            Option("batch_results"), " reads answers into the cache: it takes no ", refused
        )
    check_submit(settings)


def check_submit(settings: JudgeSettings) -> None:
    """`submit` writes, sends and reads the batch: none of the other batch options."""
    if settings.submit and (
        settings.batch is not None or settings.batch_results or settings.dry_run or settings.refresh
    ):
        raise UsageError(
            Option("submit"), " writes, sends and reads the batch itself: it takes no ",
            *(Option("batch"), ", ", Option("batch_results"), ", "),
            *(Option("dry_run"), " or ", Option("refresh")),
        )  # fmt: skip


def check_batch_written(settings: JudgeSettings) -> None:
    """`batch` writes the batch and stops: nothing to read back, predict or evaluate."""
    if settings.batch_results:
        raise UsageError(
            Option("batch"), " writes a batch, ", Option("batch_results"), " reads one: give one"
        )
    if settings.dry_run:
        raise UsageError(
            Option("batch"), " writes files: it is no dry run (drop ", Option("dry_run"), ")"
        )
    if settings.output is not None or settings.then_evaluate:
        raise UsageError(
            Option("batch"), " stops once the batch is written: give ", Option("output"),
            " (and ", Option("evaluate"), ") with ", Option("batch_results"),
        )  # fmt: skip


def check_evaluate(settings: JudgeSettings) -> None:
    """Scoring the predictions takes their file, with one row per conversation."""
    if not settings.then_evaluate:
        return
    if settings.output is None:
        raise UsageError(
            Option("evaluate"), " reads the predictions file: give ", Option("output"), " FILE"
        )
    if settings.persona is not None:
        raise UsageError(
            Option("evaluate"), " scores one row per conversation; a ", Option("persona"),
            " file has one per group (docs/judge.md says how to score it)",
        )  # fmt: skip


def read_api_key(variable: str | None) -> str | None:
    """The key from $OPENAI_API_KEY, or from the variable named (which must be set); never
    shown."""
    key = os.environ.get(variable or API_KEY_VARIABLE) or None
    if variable is not None and key is None:
        raise UsageError(
            Option("api_key_env"), f" {variable}: that environment variable is not set"
        )
    if key is not None and not sendable(key):
        raise UsageError(
            f"the API key in ${variable or API_KEY_VARIABLE} has spaces, control or non-ASCII "
            "characters, which an HTTP header cannot carry"
        )
    return key


def sendable(key: str) -> bool:
    """Whether an HTTP header can carry `key`: printable ASCII without spaces."""
    return key.isascii() and all(c.isprintable() and not c.isspace() for c in key)


def read_item_ids(path: Path) -> tuple[str, ...]:
    """Item ids from a file: one a line, or a CSV whose header names item_id."""
    import csv

    rows = [row for row in csv.reader(item_id_lines(path)) if any(c.strip() for c in row)]
    if not rows:
        raise DicesError(Option("items"), f" {path} holds no item ids")
    return tuple(dict.fromkeys(i for i in item_ids(rows) if i))


def item_ids(rows: list[list[str]]) -> list[str]:
    """The item_id column of the rows when their header names one, else their first cells."""
    header = [c.strip() for c in rows[0]]
    if "item_id" not in header:
        return [row[0].strip() for row in rows]
    column = header.index("item_id")
    return [row[column].strip() for row in rows[1:] if len(row) > column]


def item_id_lines(path: Path) -> list[str]:
    """The lines of an items file (UTF-8, a BOM allowed)."""
    try:
        return path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise DicesError("cannot read ", Option("items"), f" {path}: {reason}") from error


# --- the output and its manifest ------------------------------------------------------------


def prepared_output(settings: JudgeSettings, inputs: list[Path]) -> Output:
    """Where the predictions go, refused before the work (as their manifest is) when it
    cannot be written."""
    from dices_cli.output import Output

    output = Output.build(settings.format, settings.output, settings.force, inputs)
    if settings.output is not None:
        check_manifest(settings.output, settings.force, inputs)
    return output


def check_manifest(output: Path, force: bool, inputs: list[Path]) -> None:
    """Refuse a manifest path that exists (without `force`) or is a symbolic link (ever:
    its target would be written)."""
    from dices_cli.judge.run import manifest_path
    from dices_cli.output import check_output

    manifest = manifest_path(output)
    if manifest.is_symlink():
        raise DicesError(
            f"{manifest} is a symbolic link; dices does not write through one: remove it"
        )
    if manifest.exists() and not manifest.is_file():
        raise DicesError(
            f"{manifest} exists and is not a file; remove it or choose another ", Option("output")
        )
    check_output(manifest, force, inputs)


def write_manifest(output: Path, outcome: Outcome, inputs: list[Path], force: bool) -> None:
    """The run's manifest beside its predictions, checked again: it may have appeared
    during the run."""
    from dices_cli.judge.run import manifest_path
    from dices_cli.output import open_output

    check_manifest(output, force, inputs)
    with open_output(manifest_path(output), force=force, inputs=inputs) as handle:
        handle.write(json.dumps(outcome.manifest, indent=2, ensure_ascii=False).encode() + b"\n")


# --- what is told on the way -----------------------------------------------------------------


def tell_read_back(read: ReadBack, tell: Tell) -> None:
    """What a batch's results held."""
    from dices_cli.terminal_text import printable

    tell(
        f"batch results: {read.answered} answers and {read.failed} failed requests cached, "
        f"{read.already_cached} already cached, {read.problem_count} lines not results "
        "of this run"
    )
    for problem in read.problems[:PROBLEMS_TOLD]:
        which = f" ({printable(problem.custom_id)})" if problem.custom_id else ""
        tell(f"  {printable(str(problem.path))} line {problem.line}{which}: {problem.problem}")
    if read.problem_count > PROBLEMS_TOLD:
        tell(f"  ... and {read.problem_count - PROBLEMS_TOLD} more")


def tell_counts(counts: dict[str, int], tell: Tell) -> None:
    """What the run asked and got; a warning for the answers that could not be read."""
    tell(
        f"judged {counts['items']} conversations: {counts['calls']} calls, "
        f"{counts.get('requests', 0)} asked, {counts.get('cache_hits', 0)} from the cache, "
        f"{counts.get('failed_attempts', 0)} failed attempts retried, "
        f"{counts.get('tokens', 0):,} tokens"
    )
    if counts.get("unreadable_logprobs"):
        tell(
            f"warning: {counts['unreadable_logprobs']} answers came with logprobs that are not "
            "log probabilities (NaN, above 0, text): they have no score (dices sql "
            '"SELECT answer, error FROM judge_calls WHERE ok AND error IS NOT NULL")'
        )
    if counts.get("unreadable"):
        tell(
            f"warning: {counts['unreadable']} answers could not be read (kept raw in the cache: "
            'dices sql "SELECT * FROM judge_calls WHERE ok AND verdict IS NULL"); '
            f"{counts['without_prediction']} conversations have no prediction"
        )
