"""`dices judge`: run an LLM judge or a safety classifier over DICES or ProsocialDialog.

The command parses its options, runs `dices_cli.runs.judge.run_judge`, and writes what it
returns: a dry run's figures, a batch's files, or the predictions."""

from __future__ import annotations

import contextlib
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
)
from dices_cli.cli.render import say
from dices_cli.families import SCORED_BY_DEFAULT
from dices_cli.runs.judge import API_KEY_VARIABLE

if TYPE_CHECKING:
    from dices_cli.runs.judge import DryRun, JudgeResult, Progress, Written


JUDGE_HELP = """Run an LLM judge or a safety classifier over DICES or ProsocialDialog: cached, resumable, polarity declared, straight into evaluate.

Each conversation is sent to an OpenAI-compatible Chat Completions endpoint (vLLM, Ollama, llama.cpp's server, TGI, LM Studio, OpenAI, a gateway) with a declared prompt (--prompt: dices-safety, judge-bench, guard, or a TOML file of your own), and its answer read as the prompt's answers table says (Yes = unsafe for dices-safety, Yes = safe for judge-bench). An answer that cannot be read is kept raw and counted, never guessed. The key comes from $OPENAI_API_KEY (or the variable --api-key-env names) and is written nowhere.

Every answer is cached in the data directory (DIR/judge/; dices sql sees it as judge_calls): running the same command again asks nothing, and a run stopped by Ctrl-C, kill -9 or a failing server resumes where it stopped. The predictions (model, item_id, label, score, p_*, prompt, persona) are what dices evaluate reads; -o FILE also gets FILE.judge.json, the run's manifest.

A declared dataset (-d popquorn_offensiveness, a --declaration of your own) is judged item by item with a scale prompt: it declares label = "NAME", reads the items' text fields ({text}), and maps each answer to a value of the label's scale ("1" = 1 ... "5" = 5; --prompt offensiveness-1-5). Its predictions (model, item_id, label, p_VALUE) are what dices evaluate -d NAME scores.

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
            metavar="NAME",
            help=f"The conversations to judge: {', '.join(MEMBERS_THEN_ALL)}; or a declared "
            "dataset's items, with a prompt that declares its label (docs/judge.md).",
        ),
    ] = SCORED_BY_DEFAULT,
    prompt: Annotated[
        str,
        typer.Option(
            "--prompt",
            "-p",
            metavar="NAME|FILE",
            help="dices-safety, judge-bench, guard, offensiveness-1-5 (POPQUORN), or a file.",
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
        ),
    ] = 60.0,
    price_in: Annotated[
        float | None,
        typer.Option(
            "--price-in",
            min=0.0,
            metavar="DOLLARS",
            help="Dollars per million input tokens, online (default: the prompt's [price]).",
        ),
    ] = None,
    price_out: Annotated[
        float | None,
        typer.Option(
            "--price-out",
            min=0.0,
            metavar="DOLLARS",
            help="Dollars per million output tokens, online (default: the prompt's [price]).",
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
    from dices_cli.runs.common import data_store
    from dices_cli.runs.judge import JudgeSettings, run_judge

    settings = JudgeSettings(
        model=model,
        dataset=dataset,
        prompt=prompt,
        base_urls=tuple(base_url or ()),
        api_key_env=api_key_env,
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
        items=items,
        dry_run=dry_run,
        refresh=refresh,
        logprobs=not no_logprobs,
        name=name,
        batch=batch,
        batch_results=tuple(batch_results or ()),
        batch_max_requests=batch_max_requests,
        batch_max_bytes=batch_max_bytes,
        submit=submit,
        batch_poll=batch_poll,
        price_in=price_in,
        price_out=price_out,
        output=output,
        format=fmt,
        force=force,
        then_evaluate=then_evaluate,
    )
    with progress_shown() as progress:
        result = run_judge(data_store(data), settings, progress, say)
    render(result, max_tokens)
    if then_evaluate and output is not None:
        from dices_cli.cli.commands.evaluate import evaluate

        evaluate(str(output), dataset=dataset, label=judged_label(result), data=data)


def judged_label(result: JudgeResult) -> str | None:
    """The declared label a scale prompt rated (None: DICES's verdicts)."""
    prompt = result.outcome.manifest["prompt"] if result.outcome is not None else None
    return prompt.get("label") if isinstance(prompt, dict) else None


def render(result: JudgeResult, max_tokens: int) -> None:
    """A dry run's figures, a batch's files, or the predictions (unless written to -o)."""
    from dices_cli.cli.render import show

    if result.planned is not None:
        show_dry_run(result.planned, max_tokens)
    elif result.written is not None:
        show_batch(result.written)
    elif result.outcome is not None and result.output is not None and result.output.path is None:
        show(result.outcome.table, result.output, title="judge")


def show_batch(written: Written) -> None:
    """Each batch file's name on stdout, what was written on stderr."""
    for part in written.files:
        print(part.path)
    say(
        f"batch: {written.requests} requests in {len(written.files)} files "
        f"({written.cached} of {written.calls} calls answered by the cache); submit each "
        "to a Batch API or vllm run-batch, then run the same command with --batch-results "
        "OUTPUT.jsonl in place of --batch"
    )


def show_dry_run(planned: DryRun, max_tokens: int) -> None:
    print(f"calls: {planned.calls}")
    print(f"cached: {planned.cached}")
    print(f"requests to make: {planned.to_ask}")
    # How each figure is reached, on its own line: a person reads the estimate's basis.
    print(
        f"prompt tokens (estimated, offline: words, numbers and punctuation as GPT-style "
        f"tokenizers split them, plus the chat format's): {planned.prompt_tokens}"
    )
    print(
        f"answer tokens (at most: --max-tokens {max_tokens} x "
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
    """A progress bar on stderr when it is a terminal and -q is not given, drawn from the
    run's first answer on (a dry run, a batch written or sent, shows none)."""
    from dices_cli.cli.render import is_quiet

    if is_quiet() or not sys.stderr.isatty():
        yield None
        return
    with contextlib.ExitStack() as stack:
        bar: list[Callable[[Progress], None]] = []

        def update(state: Progress) -> None:
            if not bar:
                bar.append(stack.enter_context(progress_bar()))
            bar[0](state)

        yield update


@contextlib.contextmanager
def progress_bar() -> Iterator[Callable[[Progress], None]]:
    """The bar: done/total, the time left, the rate, the tokens, the cache hits and the
    failed attempts."""
    import time

    import rich.progress as bars

    from dices_cli.cli.render import stderr_console

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


def register(app: typer.Typer) -> None:
    app.command(help=JUDGE_HELP, no_args_is_help=True)(judge)
