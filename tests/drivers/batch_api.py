"""A fake of OpenAI's Batch API (and of `vllm run-batch`) for the judge's batch tests: it
"processes" a batch input file into the output and error files such a batch gives.

Each request is answered as tests/drivers/judge_server.py answers it online (`answer_for`
the user message, the same logprobs), so a batch run and an online run give the same
predictions. `fail` names requests (by their index in the file) that fail with HTTP 500;
`expire_after` processes only that many, and the rest get OpenAI's `batch_expired` error,
as an expired batch does. Every request it sees is kept (`Processed.bodies`), so a test can
check none is asked twice.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.drivers.judge_server import answer_for

EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."


def completion(text: str) -> dict[str, Any]:
    """A Chat Completions answer as the judge server gives it (0.8 / 0.15 / 0.05 Maybe)."""
    other = "No" if text == "Yes" else "Yes"
    top = [
        {"token": text, "logprob": math.log(0.8)},
        {"token": other, "logprob": math.log(0.15)},
        {"token": "Maybe", "logprob": math.log(0.05)},
    ]
    return {
        "id": "chatcmpl-batch",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "logprobs": {
                    "content": [{"token": text, "logprob": top[0]["logprob"], "top_logprobs": top}]
                },
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101},
    }


@dataclass
class Processed:
    bodies: list[dict[str, Any]] = field(default_factory=list)
    custom_ids: list[str] = field(default_factory=list)


def process(
    batch: Path,
    output: Path,
    errors: Path | None = None,
    fail: frozenset[int] = frozenset(),
    expire_after: int | None = None,
    seen: Processed | None = None,
) -> Processed:
    """Answer the requests of `batch` into `output` (answers and failures, as vLLM writes
    them) or, with `errors`, failures there (as OpenAI splits them)."""
    seen = seen if seen is not None else Processed()
    answers, failures = [], []
    for index, line in enumerate(batch.read_bytes().splitlines()):
        request = json.loads(line)
        assert set(request) == {"custom_id", "method", "url", "body"}
        assert request["method"] == "POST" and request["url"] == "/v1/chat/completions"
        custom_id = request["custom_id"]
        result: dict[str, Any] = {"id": f"batch_req_{index}", "custom_id": custom_id}
        if expire_after is not None and index >= expire_after:
            result |= {
                "response": None,
                "error": {"code": "batch_expired", "message": EXPIRED_MESSAGE},
            }
            failures.append(result)
            continue
        seen.bodies.append(request["body"])
        seen.custom_ids.append(custom_id)
        if index in fail:
            body = {"error": {"message": "internal error", "type": "server_error"}}
            result |= {"response": {"status_code": 500, "body": body}, "error": None}
            failures.append(result)
            continue
        text = answer_for(request["body"]["messages"][-1]["content"])
        response = {"status_code": 200, "request_id": f"req_{index}", "body": completion(text)}
        answers.append(result | {"response": response, "error": None})
    if errors is None:
        answers += failures
        failures = []
    output.write_text("".join(json.dumps(a) + "\n" for a in answers))
    if errors is not None:
        errors.write_text("".join(json.dumps(f) + "\n" for f in failures))
    return seen
